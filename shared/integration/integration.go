// Package integration is the wiki's side of its links to issue trackers: the
// IntegrationDescriptor of spec 2.3 with its validation, the tenant's admin
// settings, the outbound queue (listing, pushing and deleting the outbox
// messages of one integration), the publisher that hands committed outbox
// messages to SQS, the delivery of version-4 message batches to a tracker,
// the scheduled sync run, the links callback of the tracker and the
// throttled API-error e-mails. It holds no AWS types: it declares the stores,
// queue, tracker and mailer it consumes, implemented in shared/dynamo,
// shared/queue and shared/mail (the HTTP tracker client lives here, in
// delivery.go, because it is the protocol itself).
package integration

import (
	"crypto/rand"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/netpolicy"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Status says whether the wiki sends messages to an integration.
type Status string

// The statuses of spec 2.3.
const (
	Active   Status = "ACTIVE"
	Disabled Status = "DISABLED"
)

// ParseStatus returns the status named s (case-insensitive), or a 400 error
// naming the allowed values.
func ParseStatus(s string) (Status, error) {
	switch st := Status(strings.ToUpper(strings.TrimSpace(s))); st {
	case Active, Disabled:
		return st, nil
	}
	return "", apperr.Invalidf("unknown status %q: use ACTIVE or DISABLED", s)
}

// Protocol constants.
const (
	// MaxVersion is the highest API version this wiki supports: version 4
	// is the one whose message shape spec 2.5 documents; version 5 adds
	// LINKS messages and UPDATED's changedFields (link convergence).
	MaxVersion = 5
	// DefaultVersion is the version of a new integration: 4, until the
	// tracker's link dialog (or an admin) negotiates 5.
	DefaultVersion = 4
	// DefaultEndpoint is the tracker endpoint of API versions 1 and above.
	DefaultEndpoint = "/rest/reqs/1/api"
	// DefaultThrottle is the default sendErrorsToEmailThrottle, in minutes.
	DefaultThrottle = 60
	// MaxThrottle bounds sendErrorsToEmailThrottle: one week, in minutes.
	MaxThrottle = 7 * 24 * 60
)

// Descriptor is one integration: the IntegrationDescriptor of spec 2.3 plus
// what the wiki keeps about it privately (the tracker credential, the hash of
// the incoming credential, delivery bookkeeping). countMessagesInQueue is not
// here: it is computed from the outbox (see View).
type Descriptor struct {
	ServiceID  string // application link id, or a generated UUID
	ApplinkID  string // ServiceID when the integration is an application link, else ""
	Label      string
	DisplayURL string // public address of the tracker
	RPCURL     string // backend address the wiki POSTs messages to
	Endpoint   string // "" for version 0, DefaultEndpoint (or another path) from version 1
	// SendErrorsToEmail receives API error e-mails ("" = none).
	SendErrorsToEmail string
	// SendErrorsToEmailThrottle is the least time between two error e-mails,
	// in minutes; 0 sends one per failing sync run.
	SendErrorsToEmailThrottle int
	UserKey                   string
	Username                  string
	Version                   int
	Status                    Status
	// PendingRemovals counts the links pages stopped holding that the
	// integration, below version 5, could not be told to remove; a
	// version-5 reconcile sends them and resets it. Read-only.
	PendingRemovals int

	// Token is the tracker credential the wiki sends as a bearer token. It is
	// write-only: never returned by the API, never logged.
	Token string
	// IncomingTokenHash is the auth hash of the Link credential this tracker
	// uses to call the wiki (the plain token is shown once).
	IncomingTokenHash string

	// SweepFrom is an outbox id prefix: every message older than it is known
	// not to be NEW (see Sync). Maintained by the sync function.
	SweepFrom string
	// LastErrorMail is when the last API error e-mail was sent.
	LastErrorMail time.Time
	// Rev is the optimistic-concurrency revision of the descriptor fields.
	Rev       int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Throttle returns SendErrorsToEmailThrottle as a duration.
func (d *Descriptor) Throttle() time.Duration {
	return time.Duration(d.SendErrorsToEmailThrottle) * time.Minute
}

// URL is where messages are POSTed: rpcUrl + endpoint.
func (d *Descriptor) URL() string {
	return strings.TrimRight(d.RPCURL, "/") + d.Endpoint
}

// View is a descriptor as the API shows it, with the computed count of NEW
// messages.
type View struct {
	*Descriptor
	CountMessagesInQueue int
}

// ValidServiceID reports whether id can name an integration: 1 to 64
// letters, digits, '.', '_' or '-', and neither "." nor ".."
// (requirement.ValidLinkID). The id is part of keys, paths and SQS message
// group ids (tenant#serviceId, at most 128 characters), so it never holds
// '#' or '/'.
func ValidServiceID(id string) bool { return requirement.ValidLinkID(id) }

// NewServiceID returns a random UUID (version 4), the serviceId of an
// integration that is not an application link.
func NewServiceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Patch is a change to a descriptor: nil fields keep their value. It is the
// input of create and update.
type Patch struct {
	ServiceID                 *string
	ApplinkID                 *string
	Label                     *string
	DisplayURL                *string
	RPCURL                    *string
	Endpoint                  *string
	SendErrorsToEmail         *string
	SendErrorsToEmailThrottle *int
	UserKey                   *string
	Username                  *string
	Version                   *int
	Status                    *string
	// Token replaces the tracker credential ("" removes it).
	Token *string
	// RotateToken asks for a new incoming credential (update only).
	RotateToken bool
}

// apply copies the set fields of p onto d, trimming strings.
func (p *Patch) apply(d *Descriptor) error {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	set(&d.ApplinkID, p.ApplinkID)
	set(&d.Label, p.Label)
	set(&d.DisplayURL, p.DisplayURL)
	set(&d.RPCURL, p.RPCURL)
	set(&d.Endpoint, p.Endpoint)
	set(&d.SendErrorsToEmail, p.SendErrorsToEmail)
	set(&d.UserKey, p.UserKey)
	set(&d.Username, p.Username)
	if p.SendErrorsToEmailThrottle != nil {
		d.SendErrorsToEmailThrottle = *p.SendErrorsToEmailThrottle
	}
	if p.Version != nil {
		d.Version = *p.Version
	}
	if p.Status != nil {
		st, err := ParseStatus(*p.Status)
		if err != nil {
			return err
		}
		d.Status = st
	}
	if p.Token != nil {
		d.Token = *p.Token
	}
	return nil
}

// Normalize fills the defaults that follow from other fields: the display
// URL and label from the RPC URL, and the endpoint from the version (empty
// for version 0, DefaultEndpoint when empty from version 1).
func (d *Descriptor) Normalize() {
	if d.DisplayURL == "" {
		d.DisplayURL = d.RPCURL
	}
	if d.Label == "" {
		if u, err := url.Parse(d.DisplayURL); err == nil && u.Host != "" {
			d.Label = u.Host
		}
	}
	if d.Version == 0 {
		d.Endpoint = ""
	} else if d.Endpoint == "" {
		d.Endpoint = DefaultEndpoint
	}
	if d.Status == "" {
		d.Status = Active
	}
}

// Validate checks a normalized descriptor; errors are 400s naming the field.
func (d *Descriptor) Validate() error {
	if !ValidServiceID(d.ServiceID) {
		return apperr.InvalidField("serviceId", "invalid serviceId %q: use 1 to 64 letters, digits, '.', '_' or '-', not \".\" or \"..\"", d.ServiceID)
	}
	if d.ApplinkID != "" && d.ApplinkID != d.ServiceID {
		return apperr.InvalidNamed("applinkId", "applinkId %q must be empty or equal to serviceId %q", d.ApplinkID, d.ServiceID)
	}
	if d.RPCURL == "" {
		return apperr.Invalidf("rpcUrl is required: the tracker's backend address")
	}
	if err := checkURL("rpcUrl", d.RPCURL); err != nil {
		return err
	}
	if err := checkURL("displayUrl", d.DisplayURL); err != nil {
		return err
	}
	if d.Version < 0 || d.Version > MaxVersion {
		return apperr.InvalidNamed("version", "version must be between 0 and %d, got %d", MaxVersion, d.Version)
	}
	if d.Version > 0 && (!strings.HasPrefix(d.Endpoint, "/") || strings.ContainsAny(d.Endpoint, "?# ")) {
		return apperr.InvalidNamed("endpoint", "endpoint must be a path starting with '/', got %q", d.Endpoint)
	}
	if d.SendErrorsToEmail != "" {
		a, err := mail.ParseAddress(d.SendErrorsToEmail)
		if err != nil || a.Address != d.SendErrorsToEmail || !strings.Contains(a.Address, "@") {
			return apperr.InvalidNamed("sendErrorsToEmail", "sendErrorsToEmail must be one e-mail address like admin@example.com, got %q", d.SendErrorsToEmail)
		}
	}
	if d.SendErrorsToEmailThrottle < 0 || d.SendErrorsToEmailThrottle > MaxThrottle {
		return apperr.Invalidf("sendErrorsToEmailThrottle is in minutes, between 0 and %d; got %d", MaxThrottle, d.SendErrorsToEmailThrottle)
	}
	if d.Status != Active && d.Status != Disabled {
		return apperr.Invalidf("unknown status %q: use ACTIVE or DISABLED", d.Status)
	}
	for _, f := range []struct{ name, value string }{{"label", d.Label}, {"userKey", d.UserKey}, {"username", d.Username}} {
		if len(f.value) > 255 {
			return apperr.InvalidNamed(f.name, "%s is longer than 255 characters", f.name)
		}
		if requirement.HasControl(f.value) {
			return apperr.InvalidField(f.name, "must not contain control characters")
		}
	}
	if len(d.Token) > 4096 {
		return apperr.Invalidf("token is longer than 4096 characters")
	}
	if requirement.HasControl(d.Token) {
		return apperr.InvalidField("token", "must not contain control characters (CR and LF included)")
	}
	return nil
}

// CheckTarget checks rpcUrl against the outbound policy (shared/netpolicy):
// never a link-local, unspecified, multicast or broadcast address, and no
// loopback or private one unless allowPrivate (ALLOW_PRIVATE_TARGETS). The
// error is a 400 naming the field. Calls are checked again when they are
// made, after DNS resolution (shared/outbound).
func (d *Descriptor) CheckTarget(allowPrivate bool) error {
	if _, err := (netpolicy.Policy{AllowPrivate: allowPrivate}).ParseURL(d.RPCURL); err != nil {
		return apperr.InvalidField("rpcUrl", "%q is refused: %s", d.RPCURL, err.Error())
	}
	return nil
}

// checkURL accepts absolute http(s) URLs without credentials, query or
// fragment: credentials belong in the token.
func checkURL(field, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return apperr.InvalidField(field, "must be an absolute http or https URL, got %q", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return apperr.InvalidField(field, "must not carry credentials, a query or a fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return apperr.InvalidField(field, "port %s is not in 1-65535", p)
		}
	}
	if len(s) > 2048 {
		return apperr.InvalidField(field, "is longer than 2048 characters")
	}
	return nil
}

// Settings are the tenant's wiki administration options.
type Settings struct {
	// IsolateSpaces limits a search without a spaceKey query parameter to
	// the space of its path (spec §4.1 scope rule).
	IsolateSpaces bool
	// SuspectFields are the fields whose change on a page save makes the
	// links to a requirement suspect (docs/change-analysis.md): nil for the default,
	// requirement.DefaultSuspectFields.
	SuspectFields []string
}

// EffectiveSuspectFields returns SuspectFields, or the default when they
// were never set.
func (s Settings) EffectiveSuspectFields() []string {
	if s.SuspectFields == nil {
		return slices.Clone(requirement.DefaultSuspectFields)
	}
	return s.SuspectFields
}
