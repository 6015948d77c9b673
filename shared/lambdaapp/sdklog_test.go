package lambdaapp

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
)

// TestSDKLoggerWritesJSONAndDropsTheSpuriousChecksumWarning: the SDK's own
// lines become JSON lines of the function's log at their level, except the
// known-spurious DynamoDB checksum warning, which is dropped.
func TestSDKLoggerWritesJSONAndDropsTheSpuriousChecksumWarning(t *testing.T) {
	var buf bytes.Buffer
	l := sdkLogger{log: slog.New(slog.NewJSONHandler(&buf, nil))}
	l.Logf(logging.Warn, "failed to close HTTP response body, this may affect connection reuse: response did not match expected checksum, 0, %d", 837963753)
	if buf.Len() != 0 {
		t.Fatalf("the spurious checksum warning was logged: %s", buf.String())
	}
	l.Logf(logging.Warn, "retrying %s after %d ms", "GetItem", 20)
	l.Logf(logging.Debug, "request sent")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 JSON lines, got %q", buf.String())
	}
	var first struct{ Level, Msg, Message string }
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Level != "WARN" || first.Msg != "aws sdk" || first.Message != "retrying GetItem after 20 ms" {
		t.Fatalf("first line %q (%v)", lines[0], err)
	}
	if !strings.Contains(lines[1], `"level":"INFO"`) {
		t.Fatalf("a non-warning is not INFO: %q", lines[1])
	}
}
