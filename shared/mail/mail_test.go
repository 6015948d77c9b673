package mail

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
)

type fakeSES struct {
	in  *sesv2.SendEmailInput
	err error
}

func (f *fakeSES) SendEmail(_ context.Context, in *sesv2.SendEmailInput, _ ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	f.in = in
	return &sesv2.SendEmailOutput{}, f.err
}

func TestSES(t *testing.T) {
	t.Parallel()
	api := &fakeSES{}
	if err := NewSES(api, "noreply@example.com").Send(context.Background(), "ops@example.com", "subj", "body"); err != nil {
		t.Fatal(err)
	}
	in := api.in
	if aws.ToString(in.FromEmailAddress) != "noreply@example.com" || in.Destination.ToAddresses[0] != "ops@example.com" ||
		aws.ToString(in.Content.Simple.Subject.Data) != "subj" || aws.ToString(in.Content.Simple.Body.Text.Data) != "body" {
		t.Fatalf("SendEmail input = %+v", in)
	}
	api.err = errors.New("throttled")
	if err := NewSES(api, "a@example.com").Send(context.Background(), "b@example.com", "s", "b"); err == nil || !strings.Contains(err.Error(), "throttled") {
		t.Fatalf("Send = %v", err)
	}
}

func TestLog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	m := NewLog(slog.New(slog.NewJSONHandler(&buf, nil)))
	if err := m.Send(context.Background(), "ops@example.com", "API error", "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, `"to":"ops@example.com"`) || !strings.Contains(out, `"body":"HTTP 500"`) {
		t.Fatalf("log = %s", out)
	}
}
