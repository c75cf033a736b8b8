package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Parsers turn the text of one environment variable into a typed value.
// They check syntax only; ranges and enumerations are checked by
// Config.Validate so that values set by flags get the same checks.

func parseString(v string) (string, error) { return v, nil }

// parseDebugAddr reads PARLEY_DEBUG_ADDR: empty (off), or a listen address, where a bare port
// (":6060") means loopback, never every interface.
func parseDebugAddr(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if strings.HasPrefix(v, ":") {
		v = "127.0.0.1" + v
	}
	if err := checkAddr(v); err != nil {
		return "", err
	}
	return v, nil
}

func parseSynchronous(v string) (string, error) {
	switch v = strings.ToLower(v); v {
	case "normal", "full":
		return v, nil
	}
	return "", fmt.Errorf("%q is not normal or full", v)
}

func parseVersionExecution(v string) (string, error) {
	switch v = strings.ToLower(v); v {
	case WorkflowVersionExecutionAllowed, WorkflowVersionExecutionNotAllowed:
		return v, nil
	}
	return "", fmt.Errorf("%q is not allowed or not_allowed", v)
}

func parseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%q is not true or false", v)
	}
	return b, nil
}

func parseInt(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errors.New("not an integer")
	}
	return n, nil
}

func parseInt64(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, errors.New("not an integer")
	}
	return n, nil
}

func parseDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errors.New(`not a duration (examples: "10s", "1m30s")`)
	}
	return d, nil
}

// parseExtensionList accepts Dify's comma-separated blacklist and is lenient
// about case, spaces and leading dots: "EXE, .bat" → [exe bat].
func parseExtensionList(v string) ([]string, error) {
	var out []string
	for part := range strings.SplitSeq(v, ",") {
		ext := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(part), "."))
		if ext == "" || slices.Contains(out, ext) {
			continue
		}
		if strings.ContainsAny(ext, `/\ .`) {
			return nil, fmt.Errorf("invalid extension %q", ext)
		}
		out = append(out, ext)
	}
	return out, nil
}

// parsePrefixList reads comma-separated CIDR prefixes; a plain address is its own /32 or /128:
// "127.0.0.1, 10.1.0.0/16" → [127.0.0.1/32 10.1.0.0/16].
func parsePrefixList(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if a, err := netip.ParseAddr(part); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or CIDR prefix", part)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func parseValidationMode(v string) (ValidationMode, error) {
	m := ValidationMode(strings.ToLower(v))
	switch m {
	case ValidationEnforce, ValidationLog, ValidationOff:
		return m, nil
	}
	return "", errors.New("must be enforce, log or off")
}

func parseLogLevel(v string) (slog.Level, error) {
	switch strings.ToLower(v) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, errors.New("must be debug, info, warn or error")
}

func parseLogFormat(v string) (LogFormat, error) {
	f := LogFormat(strings.ToLower(v))
	switch f {
	case LogFormatText, LogFormatJSON:
		return f, nil
	}
	return "", errors.New("must be json or text")
}
