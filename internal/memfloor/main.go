// Command memfloor links every package the sidecars import and does nothing
// but collect garbage: tools/benchreload measures its idle memory, the part
// of a sidecar's that comes from its libraries and the Go runtime alone.
//
// Usage: memfloor N, where N is how many collections to run (each returning
// freed memory to the OS) before it waits for SIGTERM or SIGINT.
package main

import (
	_ "archive/tar"
	_ "bytes"
	_ "compress/gzip"
	_ "context"
	_ "encoding/binary"
	_ "encoding/json"
	_ "errors"
	"fmt"
	_ "io"
	_ "io/fs"
	_ "log/slog"
	_ "math/rand/v2"
	_ "net/http"
	_ "net/url"
	"os"
	_ "os/exec"
	"os/signal"
	_ "os/user"
	_ "path/filepath"
	_ "runtime"
	"runtime/debug"
	_ "slices"
	"strconv"
	_ "strings"
	_ "sync/atomic"
	"syscall"
	_ "time"

	_ "github.com/alecthomas/kingpin/v2"
	_ "github.com/cespare/xxhash/v2"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/oklog/run"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/collectors/version"
	_ "github.com/prometheus/client_golang/prometheus/promauto"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/common/config"
	_ "github.com/prometheus/common/promslog"
	_ "github.com/prometheus/common/version"
	_ "github.com/prometheus/exporter-toolkit/web"
	_ "golang.org/x/sys/unix"
)

func main() {
	n, err := strconv.Atoi(onlyArg(os.Args))
	if err != nil || n < 0 {
		fmt.Fprintln(os.Stderr, "usage: memfloor N (collections to run, N >= 0)")
		os.Exit(2)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	for range n {
		debug.FreeOSMemory()
	}
	<-stop
}

// onlyArg returns the only argument, or "" when there is not exactly one.
func onlyArg(args []string) string {
	if len(args) != 2 {
		return ""
	}
	return args[1]
}
