package ucl

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Method is one engine method as every face sees it. Methods is the one
// place a method is declared: the owner's socket handler (Handler), the
// REST routes (internal/httpapi), the MCP tools' engine calls and the
// docs' lists are derived from it, and tests hold the Go Client, the CLI
// commands and the MCP tool table against it (methods_test.go,
// cmd/ucl, internal/mcpserver).
type Method struct {
	// Name is the method's wire name: the socket route is POST /v1/{Name}.
	Name string
	// GoName is the name of the API method it calls.
	GoName string
	// Summary says what the method does, in one line.
	Summary string
	// REST is the TCP route, "VERB /v1/path" with {field} wildcards that
	// fill the request field of that JSON name; "" when the method is not
	// served over TCP (administration stays on the owner's socket and the
	// CLI). A GET route fills the request from its path and query
	// parameters; a POST route decodes its body as the request, then
	// fills path wildcards.
	REST string
	// Tool is the MCP tool whose main engine call this method is ("" :
	// none).
	Tool string
	// CLI is the `ucl` command that calls it ("" : none), e.g. "sync push".
	CLI string
	// Stream names the field of each NDJSON line of a streamed result
	// ("" : one result).
	Stream string

	req  reflect.Type // the request type (a struct)
	res  reflect.Type // the result type; nil for a stream
	call func(ctx context.Context, api API, req any, emit func(any) error) (any, error)
}

// Request returns the method's request type.
func (m *Method) Request() reflect.Type { return m.req }

// Result returns the method's result type (nil for a streamed method).
func (m *Method) Result() reflect.Type { return m.res }

// NewRequest returns a pointer to a zero request of the method.
func (m *Method) NewRequest() any { return reflect.New(m.req).Interface() }

// Call calls the method on api with req (a pointer from NewRequest, or a
// request value). A streamed method calls emit per item and returns a nil
// result.
func (m *Method) Call(ctx context.Context, api API, req any, emit func(any) error) (any, error) {
	return m.call(ctx, api, req, emit)
}

// RESTRoute splits Method.REST into its verb and path ("", "" : none).
func (m *Method) RESTRoute() (verb, path string) {
	verb, path, _ = strings.Cut(m.REST, " ")
	return verb, path
}

func deref[Req any](req any) Req {
	if p, ok := req.(*Req); ok {
		return *p
	}
	return req.(Req)
}

// unary declares a method answering one result.
func unary[Req, Res any](name, goName string, f func(API, context.Context, Req) (*Res, error), rest, tool, cli, summary string) Method {
	return Method{Name: name, GoName: goName, Summary: summary, REST: rest, Tool: tool, CLI: cli,
		req: reflect.TypeFor[Req](), res: reflect.TypeFor[Res](),
		call: func(ctx context.Context, api API, req any, _ func(any) error) (any, error) {
			res, err := f(api, ctx, deref[Req](req))
			if res == nil {
				return nil, err
			}
			return res, err
		}}
}

// streamed declares a method answering a stream of items.
func streamed[Req, Item any](name, goName, field string, f func(API, context.Context, Req, func(Item) error) error, rest, tool, cli, summary string) Method {
	return Method{Name: name, GoName: goName, Summary: summary, REST: rest, Tool: tool, CLI: cli, Stream: field,
		req: reflect.TypeFor[Req](),
		call: func(ctx context.Context, api API, req any, emit func(any) error) (any, error) {
			return nil, f(api, ctx, deref[Req](req), func(it Item) error { return emit(it) })
		}}
}

// Methods is every method of the API, in the order the docs list them.
// Wire names are part of the socket format: do not change them, only add.
var Methods = []Method{
	unary("remember", "Remember", API.Remember, "POST /v1/store", "uc_store", "store", "store one piece of memory"),
	unary("append", "Append", API.Append, "POST /v1/append", "", "append", "append JSONL events"),
	unary("search", "Search", API.Search, "POST /v1/query", "uc_query", "query", "rank memory for a query"),
	unary("context", "Context", API.Context, "POST /v1/context", "uc_context", "context", "assemble a context under a token budget"),
	unary("index", "Index", API.Index, "POST /v1/index", "uc_index", "index", "a navigable map of the store or of a query's matches"),
	unary("get", "Get", API.Get, "POST /v1/get", "uc_get", "get", "items by id, with their chunks"),
	unary("thread", "Thread", API.Thread, "GET /v1/items/{id}/thread", "uc_get_thread", "get --thread", "the conversation around an item"),
	unary("edit", "Edit", API.Edit, "POST /v1/items/{id}/edit", "uc_edit", "edit", "a new version of an item"),
	unary("sessions", "Sessions", API.Sessions, "GET /v1/sessions", "uc_list_sessions", "session list", "sessions, most recent first"),
	unary("session", "Session", API.Session, "GET /v1/sessions/{id}", "uc_get_session", "session show", "one session's turns and summary"),
	unary("tombstone", "Tombstone", API.Tombstone, "POST /v1/tombstone", "uc_forget", "tombstone", "remove items from memory"),
	unary("dedupe", "Dedupe", API.Dedupe, "POST /v1/dedupe", "", "dedupe", "groups of near-duplicate items"),
	unary("status", "Status", API.Status, "GET /v1/status", "uc_status", "status", "describe the store"),
	streamed("replay", "Replay", "line", API.Replay, "", "", "replay", "the events as JSON lines"),
	streamed("audit_log", "AuditLog", "entry", API.AuditLog, "", "", "audit log", "one audit entry per event"),
	unary("audit_show", "AuditShow", API.AuditShow, "", "", "audit show", "one event as the audit trail sees it"),
	unary("audit_verify", "AuditVerify", API.AuditVerify, "", "", "audit verify", "verify the whole log"),
	unary("catch_up", "CatchUp", API.CatchUp, "", "", "project status", "bring every projection to the log head"),
	unary("projection_status", "ProjectionStatus", API.ProjectionStatus, "", "", "project status", "each projection's status"),
	unary("rebuild_projections", "RebuildProjections", API.RebuildProjections, "", "", "project rebuild", "rebuild projections from the log"),
	unary("verify_projections", "VerifyProjections", API.VerifyProjections, "", "", "project verify", "rebuild aside and compare digests"),
	unary("push", "Push", API.Push, "", "", "sync push", "mirror new events to Arweave"),
	unary("sync_status", "SyncStatus", API.SyncStatus, "", "", "sync status", "the mirror state"),
	unary("checkpoints", "Checkpoints", API.Checkpoints, "", "", "audit checkpoints", "the anchored checkpoints"),
	unary("prove", "Prove", API.Prove, "", "", "audit prove", "an audit proof of one event"),
	unary("share_grant", "ShareGrant", API.ShareGrant, "", "", "share grant", "grant a scope to an Arweave address"),
	unary("share_revoke", "ShareRevoke", API.ShareRevoke, "", "", "share revoke", "revoke a grant"),
	unary("share_list", "ShareList", API.ShareList, "", "", "share list", "grants given and received"),
	unary("share_pull", "SharePull", API.SharePull, "", "", "share pull", "receive the grants addressed to this wallet"),
	unary("snapshot_create", "SnapshotCreate", API.SnapshotCreate, "", "", "snapshot create", "snapshot the projections"),
	unary("snapshot_list", "SnapshotList", API.SnapshotList, "", "", "snapshot list", "local snapshots, newest first"),
	unary("snapshot_verify", "SnapshotVerify", API.SnapshotVerify, "", "", "snapshot verify", "check a snapshot"),
	unary("snapshot_restore", "SnapshotRestore", API.SnapshotRestore, "", "", "snapshot restore", "replace the projections with a snapshot"),
	unary("snapshot_publish", "SnapshotPublish", API.SnapshotPublish, "", "", "snapshot push", "upload a snapshot to Arweave"),
	unary("consolidate", "Consolidate", API.Consolidate, "", "uc_consolidate", "consolidate", "derive grounded facts and profiles from new turns"),
	unary("profile", "Profile", API.Profile, "GET /v1/profile", "uc_profile", "profile", "the current profiles, with facts and sources"),
	unary("rotate_keys", "RotateKeys", API.RotateKeys, "", "", "keys rotate", "shred tombstoned content with a new vault-key epoch"),
}

// MethodByName returns the method of that wire name.
func MethodByName(name string) (*Method, bool) {
	for i := range Methods {
		if Methods[i].Name == name {
			return &Methods[i], true
		}
	}
	return nil, false
}

// MethodByTool returns the method an MCP tool calls.
func MethodByTool(tool string) (*Method, bool) {
	for i := range Methods {
		if Methods[i].Tool == tool {
			return &Methods[i], true
		}
	}
	return nil, false
}

// FillRequest sets the fields of req (a pointer to a request struct)
// named, by their JSON names, in params: path wildcards and query
// parameters of a REST route. Numbers and booleans are parsed; a list
// field takes repeated values or a comma-separated one. An unknown name,
// a value of the wrong type, or a string field already set (by a POST
// body) to another value is ErrBadRequest.
func FillRequest(req any, params map[string][]string) error {
	v := reflect.ValueOf(req).Elem()
	fields := jsonFields(v.Type())
	for name, vals := range params {
		idx, ok := fields[name]
		if !ok {
			return fmt.Errorf("parameter %q: no such field: %w", name, ErrBadRequest)
		}
		f := v.FieldByIndex(idx)
		var raw string
		switch f.Kind() {
		case reflect.String:
			v := vals[len(vals)-1]
			if have := f.String(); have != "" && have != v {
				// A POST body that names the item differently from its path.
				return fmt.Errorf("%s %q in the body differs from %q in the path: %w", name, have, v, ErrBadRequest)
			}
			b, _ := json.Marshal(v)
			raw = string(b)
		case reflect.Slice:
			var items []string
			for _, s := range vals {
				for _, it := range strings.Split(s, ",") {
					if it != "" {
						items = append(items, it)
					}
				}
			}
			if f.Type().Elem().Kind() == reflect.String {
				b, _ := json.Marshal(items)
				raw = string(b)
			} else {
				raw = "[" + strings.Join(items, ",") + "]"
			}
		default:
			raw = vals[len(vals)-1]
		}
		if err := json.Unmarshal([]byte(raw), f.Addr().Interface()); err != nil {
			return fmt.Errorf("parameter %s=%q: want a %s: %w", name, strings.Join(vals, ","), f.Type(), ErrBadRequest)
		}
	}
	return nil
}

// jsonFields maps the JSON names of t's exported fields (embedded structs
// flattened) to their indexes. Fields without a JSON name ("-") are left
// out: they never cross the wire.
func jsonFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			for n, idx := range jsonFields(sf.Type) {
				if _, ok := out[n]; !ok {
					out[n] = append([]int{i}, idx...)
				}
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = []int{i}
	}
	return out
}
