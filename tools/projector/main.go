// Command projector is the "kubelet volume projector": it writes the regular
// files of a source directory into a volume directory with the kubelet's own
// AtomicWriter (k8s.io/kubernetes/pkg/volume/util), producing the same
// ..data / ..<timestamp> / user-visible-symlink layout and the same atomic
// swap that a ConfigMap or Secret volume update produces in a real pod.
//
// Usage:
//
//	projector -dst VOLDIR SRCDIR   project SRCDIR once, then exit
//	projector -dst VOLDIR -stdin   read one SRCDIR per line from stdin and
//	                               project each; print "ok <start> <end>"
//	                               (Unix nanoseconds just before and after
//	                               the write) or "error <message>" per line
//
// The payload is every regular file directly in SRCDIR (key = file name,
// mode 0644). VOLDIR is created if missing. Nothing but the per-line results
// of -stdin mode is written to stdout; the atomic writer's klog errors go to
// stderr.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

func main() {
	dst := flag.String("dst", "", "volume directory to project into (created if missing)")
	stdin := flag.Bool("stdin", false, "read source directories from stdin, one per line")
	flag.Parse()

	if *dst == "" || (*stdin && flag.NArg() != 0) || (!*stdin && flag.NArg() != 1) {
		fmt.Fprintln(os.Stderr, "usage: projector -dst VOLDIR SRCDIR | projector -dst VOLDIR -stdin")
		os.Exit(2)
	}
	if err := os.MkdirAll(*dst, 0o755); err != nil {
		fatal(err)
	}
	w, err := volumeutil.NewAtomicWriter(*dst, "projector")
	if err != nil {
		fatal(err)
	}

	if !*stdin {
		if _, _, err := project(w, flag.Arg(0)); err != nil {
			fatal(err)
		}
		return
	}

	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		start, end, err := project(w, in.Text())
		if err != nil {
			fmt.Fprintf(out, "error %v\n", err)
		} else {
			fmt.Fprintf(out, "ok %d %d\n", start.UnixNano(), end.UnixNano())
		}
		if err := out.Flush(); err != nil {
			fatal(err)
		}
	}
	if err := in.Err(); err != nil {
		fatal(err)
	}
}

// project reads the regular files directly in src and writes them to the
// writer's volume directory, returning the times just before and after Write.
func project(w *volumeutil.AtomicWriter, src string) (start, end time.Time, err error) {
	entries, err := os.ReadDir(src)
	if err != nil {
		return start, end, err
	}
	payload := make(map[string]volumeutil.FileProjection, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return start, end, err
		}
		payload[e.Name()] = volumeutil.FileProjection{Data: data, Mode: 0o644}
	}
	start = time.Now()
	err = w.Write(payload, nil)
	end = time.Now()
	if err != nil {
		return start, end, fmt.Errorf("projecting %s: %w", src, err)
	}
	return start, end, nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "projector:", err)
	os.Exit(1)
}
