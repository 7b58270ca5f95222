package ucl

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Every API method is declared once in Methods, and every table entry is an
// API method: a method added to the interface without a table entry (or the
// other way round) fails here.
func TestMethodTableCoversAPI(t *testing.T) {
	api := reflect.TypeFor[API]()
	byGo := map[string]*Method{}
	names, tools, routes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range Methods {
		m := &Methods[i]
		if byGo[m.GoName] != nil || names[m.Name] {
			t.Fatalf("method %s/%s declared twice", m.Name, m.GoName)
		}
		byGo[m.GoName], names[m.Name] = m, true
		if m.Tool != "" {
			if tools[m.Tool] {
				t.Fatalf("tool %s declared twice", m.Tool)
			}
			tools[m.Tool] = true
		}
		if m.REST != "" {
			verb, path := m.RESTRoute()
			if (verb != http.MethodGet && verb != http.MethodPost) || !strings.HasPrefix(path, "/v1/") || routes[m.REST] {
				t.Fatalf("method %s: bad or repeated REST route %q", m.Name, m.REST)
			}
			routes[m.REST] = true
		}
		am, ok := api.MethodByName(m.GoName)
		if !ok {
			t.Fatalf("table method %s: API has no method %s", m.Name, m.GoName)
		}
		if got := am.Type.In(1); got != m.Request() {
			t.Errorf("%s: table request %v, API takes %v", m.GoName, m.Request(), got)
		}
		if m.Summary == "" {
			t.Errorf("%s: no summary", m.Name)
		}
	}
	for i := 0; i < api.NumMethod(); i++ {
		name := api.Method(i).Name
		if name == "Close" || name == "Dir" {
			continue
		}
		if byGo[name] == nil {
			t.Errorf("API method %s is not in Methods", name)
		}
	}
}

// pathRecorder records the socket routes a Client calls.
type pathRecorder struct {
	mu    sync.Mutex
	paths []string
	next  http.Handler
}

func (p *pathRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.paths = append(p.paths, r.URL.Path)
	p.mu.Unlock()
	p.next.ServeHTTP(w, r)
}

// The Go Client calls, for each API method, the socket route the table
// declares for it, and the owner's handler answers every route (no 404):
// the client and the handler are held against the one table.
func TestClientFollowsMethodTable(t *testing.T) {
	s := newTestStore(t)
	rec := &pathRecorder{next: Handler(s)}
	c := clientOver(t, rec)
	cv := reflect.ValueOf(c)
	ctx := context.Background()
	for i := range Methods {
		m := &Methods[i]
		if m.Name == "rotate_keys" || m.Name == "rebuild_projections" || m.Name == "snapshot_restore" {
			// Zero requests of these do real work on the test store; their
			// routes are covered by the table-driven handler and
			// TestClientMatchesStore.
			continue
		}
		rec.mu.Lock()
		rec.paths = nil
		rec.mu.Unlock()
		fn := cv.MethodByName(m.GoName)
		args := []reflect.Value{reflect.ValueOf(ctx), reflect.New(m.Request()).Elem()}
		if m.Stream != "" {
			emit := reflect.MakeFunc(fn.Type().In(2), func([]reflect.Value) []reflect.Value {
				return []reflect.Value{reflect.Zero(reflect.TypeFor[error]())}
			})
			args = append(args, emit)
		}
		out := fn.Call(args)
		if err, _ := out[len(out)-1].Interface().(error); err != nil && errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v", m.GoName, err)
		}
		rec.mu.Lock()
		got := rec.paths
		rec.mu.Unlock()
		if want := "/v1/" + m.Name; len(got) != 1 || got[0] != want {
			t.Errorf("Client.%s called %v, the table says %s", m.GoName, got, want)
		}
	}
}

// An error's class crosses the socket with it.
func TestErrorClassAcrossSocket(t *testing.T) {
	s := newTestStore(t)
	c := clientOver(t, Handler(s))
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func(API) error
		want Class
	}{
		{"empty query", func(a API) error { _, err := a.Search(ctx, SearchRequest{}); return err }, ClassBadRequest},
		{"unknown session", func(a API) error { _, err := a.Session(ctx, SessionRequest{ID: "nope"}); return err }, ClassNotFound},
		{"bad role", func(a API) error {
			_, err := a.Remember(ctx, RememberRequest{Content: "x", Role: "wizard"})
			return err
		}, ClassBadRequest},
	} {
		errStore, errClient := tc.call(s), tc.call(c)
		if ClassOf(errStore) != tc.want || ClassOf(errClient) != tc.want {
			t.Errorf("%s: store %v (%s), client %v (%s), want class %s", tc.name, errStore, ClassOf(errStore), errClient, ClassOf(errClient), tc.want)
		}
	}
}

// clientOver returns a Client whose requests h answers (over TCP loopback:
// the route is what is tested, not the socket).
func clientOver(t *testing.T, h http.Handler) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &Client{dir: t.TempDir(), hc: &http.Client{Transport: tr}}
}

// No type of a projection's records or of the mirror state crosses the
// wire: requests and results are built from the API's own types (wire.go),
// the log's event types and the result types of the feature packages
// (query, snapshot). The projections package's Status and Mismatch stay:
// describing projections is what `project status` and `verify` are for.
func TestNoProjectionTypeOnTheWire(t *testing.T) {
	forbidden := []string{"/projections/", "/internal/mirror", "/internal/store", "/internal/vector"}
	seen := map[reflect.Type]bool{}
	var walk func(path string, ty reflect.Type)
	walk = func(path string, ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Array || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if seen[ty] {
			return
		}
		seen[ty] = true
		for _, f := range forbidden {
			if strings.Contains(ty.PkgPath(), f) {
				t.Errorf("%s: type %s.%s crosses the wire", path, ty.PkgPath(), ty.Name())
			}
		}
		if ty.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			walk(path+"."+f.Name, f.Type)
		}
	}
	for i := range Methods {
		m := &Methods[i]
		walk(m.Name+" request", m.Request())
		if m.Result() != nil {
			walk(m.Name+" result", m.Result())
		}
	}
}

// The package doc's method list names exactly the methods of the table.
func TestDocListsEveryMethod(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "// # Methods")
	if start < 0 {
		t.Fatal("doc.go has no # Methods section")
	}
	sec := doc[start+len("// # Methods"):]
	if end := strings.Index(sec, "\n// # "); end >= 0 {
		sec = sec[:end]
	}
	listed := map[string]bool{}
	re := regexp.MustCompile(`^//\t([A-Z][A-Za-z]*(?: / [A-Z][A-Za-z]*)*)`)
	for _, line := range strings.Split(sec, "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			for _, name := range strings.Split(m[1], " / ") {
				listed[name] = true
			}
		}
	}
	for i := range Methods {
		if !listed[Methods[i].GoName] {
			t.Errorf("doc.go's # Methods does not list %s", Methods[i].GoName)
		}
		delete(listed, Methods[i].GoName)
	}
	for name := range listed {
		t.Errorf("doc.go's # Methods lists %s, which the table does not have", name)
	}
}
