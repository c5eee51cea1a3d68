// spanprof-go-demo - a small Go HTTP service instrumented the OpenTelemetry
// way for profilers: each request runs inside pprof.Do with labels
// trace_id and span_id (W3C, lower-case hex) and http.route.  spanprof
// reads those labels in BPF for every on-CPU sample and off-CPU wait of the
// goroutine serving the request.  Standard library only.
//
//	GET /api/checkout  CPU work, a contended sync.Mutex, time.Sleep and a
//	                   file read (see handle)
//	GET /healthz       ok
//
// Trace context: the W3C traceparent header (00-TRACEID-SPANID-FLAGS)
// gives the trace id, and the request gets a new span id, child of it;
// without one, both are new random ids.
//
// Flags: -listen ADDR (127.0.0.1:8080), -load N (N client goroutines call
// the service itself, half of them with a traceparent), -duration S (exit
// after S seconds; 0 = run until killed), -truth FILE (one JSON line per
// request: route, trace_id, span_id, parent_span_id, CLOCK_MONOTONIC
// start and end ns), -file PATH (read by each request; default: the
// executable).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

var (
	truthMu  sync.Mutex
	truthEnc *json.Encoder
	shared   sync.Mutex // the contended lock every request takes
	readPath string
	sink     uint64
)

// monoNs reads CLOCK_MONOTONIC (the clock of spanprof's timestamps).
func monoNs() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	b[0] |= 1 // never all zero
	return hex.EncodeToString(b)
}

// parseTraceparent returns the trace id and parent span id of a valid
// W3C traceparent, else "", "".
func parseTraceparent(h string) (string, string) {
	p := strings.Split(strings.TrimSpace(h), "-")
	if len(p) != 4 || len(p[0]) != 2 || len(p[1]) != 32 || len(p[2]) != 16 || len(p[3]) != 2 {
		return "", ""
	}
	for _, s := range p[1:3] {
		if s != strings.ToLower(s) || strings.Trim(s, "0") == "" {
			return "", ""
		}
		if _, err := hex.DecodeString(s); err != nil {
			return "", ""
		}
	}
	return p[1], p[2]
}

//go:noinline
func compute(n int) uint64 {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		if i&8191 == 0 {
			x = mix(x)
		}
	}
	return x
}

//go:noinline
func mix(x uint64) uint64 { return x ^ x>>31 }

//go:noinline
func lockShared() {
	shared.Lock()
	sink += compute(200000) // held a while: other requests wait
	shared.Unlock()
}

//go:noinline
func readFile(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	io.Copy(io.Discard, f)
	f.Close()
}

// handle is one request's work, under its labels.
func handle() {
	sink += compute(3000000)
	lockShared()
	time.Sleep(5 * time.Millisecond)
	readFile(readPath)
}

type truthRec struct {
	Route    string  `json:"route"`
	TraceID  string  `json:"trace_id"`
	SpanID   string  `json:"span_id"`
	ParentID *string `json:"parent_span_id"`
	Start    int64   `json:"start"`
	End      int64   `json:"end"`
}

func checkout(w http.ResponseWriter, r *http.Request) {
	tid, parent := parseTraceparent(r.Header.Get("traceparent"))
	rec := truthRec{Route: "/api/checkout"}
	if tid == "" {
		tid = randomHex(16)
	} else {
		rec.ParentID = &parent
	}
	sid := randomHex(8)
	rec.TraceID, rec.SpanID, rec.Start = tid, sid, monoNs()
	pprof.Do(r.Context(), pprof.Labels("trace_id", tid, "span_id", sid,
		"http.route", "/api/checkout"), func(ctx context.Context) { handle() })
	rec.End = monoNs()
	if truthEnc != nil {
		truthMu.Lock()
		truthEnc.Encode(rec)
		truthMu.Unlock()
	}
	fmt.Fprintf(w, "ok %s %s\n", tid, sid)
}

func load(addr string, n int, until time.Time) {
	client := &http.Client{Timeout: 10 * time.Second}
	for i := 0; i < n; i++ {
		go func(i int) {
			for time.Now().Before(until) {
				req, _ := http.NewRequest("GET", "http://"+addr+"/api/checkout", nil)
				if i%2 == 0 {
					req.Header.Set("traceparent", "00-"+randomHex(16)+"-"+randomHex(8)+"-01")
				}
				resp, err := client.Do(req)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}(i)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	clients := flag.Int("load", 0, "client goroutines calling the service itself")
	dur := flag.Float64("duration", 0, "exit after this many seconds (0: run until killed)")
	truth := flag.String("truth", "", "ground-truth log: one JSON line per request")
	file := flag.String("file", "", "file each request reads (default: this executable)")
	flag.Parse()
	readPath = *file
	if readPath == "" {
		readPath, _ = os.Executable()
	}
	if *truth != "" {
		f, err := os.Create(*truth)
		if err != nil {
			log.Fatalf("spanprof-go-demo: %v", err)
		}
		defer f.Close()
		truthEnc = json.NewEncoder(f)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("spanprof-go-demo: cannot listen on %s: %v (try -listen 127.0.0.1:0)",
			*listen, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/checkout", checkout)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	fmt.Printf("spanprof-go-demo: serving on http://%s\n", ln.Addr())
	if *dur <= 0 {
		select {}
	}
	until := time.Now().Add(time.Duration(*dur * float64(time.Second)))
	load(ln.Addr().String(), *clients, until)
	time.Sleep(time.Until(until))
	// let requests in flight finish, so each is logged whole (a busy
	// machine can take seconds: a request cut short here has samples but
	// no line in the truth log)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
}
