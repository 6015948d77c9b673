// Package mail sends the API error e-mails of the sync function: through
// Amazon SES v2 when a verified sender is configured (ERROR_EMAIL_FROM), or
// to the log when none is (the local stack), so that the sync function has
// no local code path. Both implement integration.Mailer.
package mail

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/reqtrace/reqtrace/shared/integration"
)

// SESAPI is the part of the SES v2 client the mailer uses.
type SESAPI interface {
	SendEmail(ctx context.Context, in *sesv2.SendEmailInput, opts ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error)
}

var _ SESAPI = (*sesv2.Client)(nil)

// SES sends plain-text e-mails from one verified address.
type SES struct {
	api  SESAPI
	from string
}

var _ integration.Mailer = (*SES)(nil)

// NewSES returns a mailer sending from the verified address from.
func NewSES(api SESAPI, from string) *SES { return &SES{api: api, from: from} }

// Send sends one plain-text e-mail (UTF-8).
func (m *SES) Send(ctx context.Context, to, subject, body string) error {
	utf8 := aws.String("UTF-8")
	_, err := m.api.SendEmail(ctx, &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(m.from),
		Destination:      &types.Destination{ToAddresses: []string{to}},
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String(subject), Charset: utf8},
			Body:    &types.Body{Text: &types.Content{Data: aws.String(body), Charset: utf8}},
		}},
	})
	if err != nil {
		return fmt.Errorf("send e-mail with SES: %w", err)
	}
	return nil
}

// Log is the sink used when no sender is configured: it logs each e-mail
// (recipient, subject and body, which never hold credentials) at level
// WARN instead of sending it.
type Log struct {
	logger *slog.Logger
}

var _ integration.Mailer = (*Log)(nil)

// NewLog returns a sink logging to logger (slog.Default when nil).
func NewLog(logger *slog.Logger) *Log {
	if logger == nil {
		logger = slog.Default()
	}
	return &Log{logger: logger}
}

// Send logs the e-mail.
func (m *Log) Send(ctx context.Context, to, subject, body string) error {
	m.logger.WarnContext(ctx, "API error e-mail (logged, not sent: ERROR_EMAIL_FROM is empty)",
		"to", to, "subject", subject, "body", body)
	return nil
}
