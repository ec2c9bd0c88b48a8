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
//	projector -kubeconfig FILE [-namespace NS] -volume KIND:NAME:DIR[:optional] ...
//	                               do what the kubelet does for a pod's
//	                               Secret (KIND secret) and ConfigMap (KIND
//	                               configmap) volumes, until SIGTERM or SIGINT
//
// In the first two modes the payload is every regular file directly in SRCDIR
// (key = file name, mode 0644). VOLDIR is created if missing. Nothing but the
// per-line results of -stdin mode is written to stdout; the atomic writer's
// klog errors go to stderr.
//
// In the third mode each -volume's object NAME in namespace NS (default
// "default") is watched through the API server with a metadata.name field
// selector, like the kubelet's watch-based change detection; the watch
// reconnects when the API server goes away. Every key of the object (a
// Secret's data; a ConfigMap's data and binaryData) becomes a file of mode
// 0644 in DIR, which is created if missing. An absent object leaves an
// optional volume empty; a required one keeps its last content, and nothing
// is written until its object first appears (the kubelet would not start the
// pod). An unchanged payload is not written again. Each write prints one line
//
//	projected <secret|configmap> <NAME> <resourceVersion, or - when absent> <start> <end>
//
// with the Unix nanoseconds just before and after it. A failed write, or a
// list or watch failure that client-go's reflector reports, prints
// "error <message>" (and the message on stderr) and the projector keeps
// going, retrying a failed write with backoff. The reflector retries an
// unreachable API server quietly (klog on stderr at most), as in the
// kubelet. SIGTERM or SIGINT stop the watches and exit 0.
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

const usage = "usage: projector -dst VOLDIR SRCDIR | projector -dst VOLDIR -stdin | " +
	"projector -kubeconfig FILE [-namespace NS] -volume secret|configmap:NAME:DIR[:optional] ..."

func main() {
	dst := flag.String("dst", "", "volume directory to project into (created if missing)")
	stdin := flag.Bool("stdin", false, "read source directories from stdin, one per line")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server to watch Secrets and ConfigMaps on")
	namespace := flag.String("namespace", "default", "namespace of the -volume objects")
	var volumes []volume
	flag.Func("volume", "secret:NAME:DIR or configmap:NAME:DIR, optionally followed by :optional (repeatable)", func(s string) error {
		v, err := parseVolume(s)
		if err != nil {
			return err
		}
		for _, o := range volumes {
			if o.dir == v.dir {
				return fmt.Errorf("volume %q: directory %s is already the volume of %s %s", s, v.dir, o.kind, o.name)
			}
		}
		volumes = append(volumes, v)
		return nil
	})
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, usage)
		flag.PrintDefaults()
	}
	flag.Parse()

	if *kubeconfig != "" || len(volumes) > 0 {
		if *kubeconfig == "" || len(volumes) == 0 || *namespace == "" || *dst != "" || *stdin || flag.NArg() != 0 {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(runKubelet(*kubeconfig, *namespace, volumes))
	}
	if *dst == "" || (*stdin && flag.NArg() != 0) || (!*stdin && flag.NArg() != 1) {
		fmt.Fprintln(os.Stderr, usage)
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
