package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one JSON-RPC message on stdio: uc_store takes at
// most 8 MiB of content, which JSON escaping may grow.
const MaxLineBytes = 32 << 20

// StdioTransport is the transport of `ucl mcp`: newline-delimited JSON-RPC
// on in and out, as the SDK's IOTransport, except that a line that is not
// one JSON-RPC message does not end the session. The SDK closes the
// connection on the first undecodable line; here each line is checked
// first and a bad one is answered, as the JSON-RPC 2.0 specification
// says, with id null (or the line's id when it has a valid one):
//
//   - not JSON (or nested deeper than encoding/json reads): -32700 parse error
//   - longer than maxLine bytes: -32600 invalid request (the line is
//     skipped without being held in memory)
//   - JSON but no JSON-RPC 2.0 message (an array, a scalar, an object id,
//     a wrong version): -32600 invalid request. Batches are refused: the
//     protocol versions since 2025-06-18 have none.
//
// Blank lines are skipped. The good lines go to the SDK unchanged.
// maxLine ≤ 0 means MaxLineBytes.
func StdioTransport(in io.Reader, out io.Writer, maxLine int) mcp.Transport {
	if maxLine <= 0 {
		maxLine = MaxLineBytes
	}
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(filterLines(in, pw, w, maxLine))
	}()
	return &mcp.IOTransport{Reader: pr, Writer: w, MaxLineLength: maxLine + 1}
}

// lockedWriter serializes the SDK's writes (one message per Write) and the
// error answers of filterLines, so that lines never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// filterLines copies the good lines of in to good and answers the bad ones
// on out, until in ends (nil) or a write fails.
func filterLines(in io.Reader, good io.Writer, out io.Writer, maxLine int) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	for {
		var tooLong bool
		var err error
		line, tooLong, err = readLine(br, line[:0], maxLine)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			reply := checkLine(line, tooLong, maxLine)
			if reply == nil {
				if _, werr := good.Write(append(line, '\n')); werr != nil {
					return werr
				}
			} else if _, werr := out.Write(reply); werr != nil {
				return fmt.Errorf("answer a malformed message: %w", werr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
	}
}

// readLine appends the next line of br (without its "\n" or "\r\n") to
// buf. A line longer than maxLine is read to its end but not kept:
// tooLong is set and the returned line is empty.
func readLine(br *bufio.Reader, buf []byte, maxLine int) (line []byte, tooLong bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(frag) > maxLine+2 { // +2: the "\r\n" is not part of the message
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, frag...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		if !tooLong && len(buf) > maxLine {
			tooLong, buf = true, buf[:0]
		}
		return buf, tooLong, err
	}
}

// checkLine returns the error answer to a line that is not one JSON-RPC
// message, or nil for a good line.
func checkLine(line []byte, tooLong bool, maxLine int) []byte {
	if tooLong {
		return rpcError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: a message is at most %d bytes on one line", maxLine))
	}
	var v json.RawMessage
	if err := json.Unmarshal(line, &v); err != nil {
		return rpcError(nil, jsonrpc.CodeParseError, fmt.Sprintf("parse error: %v", err))
	}
	switch bytes.TrimSpace(line)[0] {
	case '{':
	case '[':
		return rpcError(nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported; send one message per line")
	default:
		return rpcError(nil, jsonrpc.CodeInvalidRequest, "invalid request: a message is a JSON object")
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return rpcError(idOf(line), jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: %v", err))
	}
	return nil
}

// idOf returns the line's id when it is a valid JSON-RPC id (a string or
// a number), else nil (answered as null).
func idOf(line []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(m.ID, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string, float64:
		return m.ID
	}
	return nil
}

// rpcError renders a JSON-RPC error response line.
func rpcError(id json.RawMessage, code int64, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		Version string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{Version: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	if err != nil { // cannot happen: every field marshals
		panic(err)
	}
	return append(b, '\n')
}
