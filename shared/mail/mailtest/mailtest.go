// Package mailtest holds Recorder, the one fake mailer of the tests of
// the packages that send e-mails (integration.Mailer).
package mailtest

import (
	"context"
	"slices"
	"sync"
)

// Mail is one e-mail sent.
type Mail struct{ To, Subject, Body string }

// String renders the mail as its headers and body, for failure messages
// and for checks of what it says anywhere.
func (m Mail) String() string { return "To: " + m.To + "\nSubject: " + m.Subject + "\n\n" + m.Body }

// Recorder is a mailer that records what it is sent. Its zero value is
// ready to use; it is safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	sent []Mail
}

// Send records the mail.
func (r *Recorder) Send(_ context.Context, to, subject, body string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, Mail{To: to, Subject: subject, Body: body})
	return nil
}

// Sent returns the mails sent so far, in order.
func (r *Recorder) Sent() []Mail {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sent)
}
