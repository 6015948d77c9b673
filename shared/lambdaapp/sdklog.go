package lambdaapp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/smithy-go/logging"
)

// sdkLogger routes the AWS SDK's own log lines (retries, warnings) into
// the function's JSON log, instead of the SDK's default "SDK <time> WARN
// ..." text lines on stderr, so every line of a function is one JSON object.
type sdkLogger struct{ log *slog.Logger }

// spuriousChecksum is the SDK's DynamoDB client warning when a response
// has no x-amz-crc32 header: DynamoDB (and DynamoDB Local) send none on
// error responses such as a failed condition, and the client then checks
// the body against 0 (aws/aws-sdk-go-v2 issue 3545). It says nothing about
// the service and would be logged for every conditional write that loses.
const spuriousChecksum = "response did not match expected checksum, 0,"

func (l sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.Contains(msg, spuriousChecksum) {
		return
	}
	level := slog.LevelInfo
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, "aws sdk", "message", msg)
}
