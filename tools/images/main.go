// Command imagebuild writes an OCI image archive (a tar of an OCI image
// layout, as `ctr images import` and `docker load` read it) of static
// binaries: one layer with the files given, /etc/passwd and /etc/group for
// root, nobody and nonroot (as distroless images have them), and /tmp; no
// shell. `make images` runs it; Docker users get the same image from the
// Dockerfile.
//
//	imagebuild -out podreload-amd64.tar -name ghcr.io/podreload/podreload:0.1.0 \
//	  -platform linux/amd64 -user 65532:65532 -entrypoint /bin/config-reloader \
//	  -file /bin/config-reloader=bin/linux-amd64/config-reloader
//
// An image may also have a CMD (-cmd), empty directories (-dir) and paths
// owned, with everything under them, by another user than root (-chown
// /path=uid:gid), as a Dockerfile's `RUN mkdir -p ... && chown -R ...`
// leaves them.
//
// Next to the archive it writes the image's CycloneDX SBOM (podreload-amd64.cdx.json:
// the Go modules of each binary, from their embedded build information) and
// its digest, the digest of its manifest (podreload-amd64.digest), which it
// also prints: "NAME PLATFORM DIGEST".
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// annotationImageName is the annotation containerd names an imported image by.
const annotationImageName = "io.containerd.image.name"

const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
)

type config struct {
	out, name, platform, user, workdir string
	entrypoint, cmd                    []string
	files                              map[string]string // path in the image to path on the host
	dirs                               []string          // empty directories
	owners                             map[string]owner  // path in the image to its owner and that of what is under it
}

// owner is the user and group IDs of a file.
type owner struct{ uid, gid int }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	cfg := config{files: map[string]string{}, owners: map[string]owner{}}
	fl := flag.NewFlagSet("imagebuild", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&cfg.out, "out", "", "OCI archive to write.")
	fl.StringVar(&cfg.name, "name", "", "Image reference, e.g. ghcr.io/podreload/podreload:0.1.0.")
	fl.StringVar(&cfg.platform, "platform", "linux/amd64", "os/architecture of the binaries.")
	fl.StringVar(&cfg.user, "user", "65532:65532", "User the image runs as.")
	fl.StringVar(&cfg.workdir, "workdir", "/", "Working directory.")
	fl.Func("entrypoint", "Entrypoint argument (repeatable).", func(s string) error {
		cfg.entrypoint = append(cfg.entrypoint, s)
		return nil
	})
	fl.Func("cmd", "CMD argument (repeatable): the default arguments of the entrypoint.", func(s string) error {
		cfg.cmd = append(cfg.cmd, s)
		return nil
	})
	fl.Func("file", "image-path=host-path of a file to add (repeatable); executable if the host file is.", func(s string) error {
		dst, src, ok := strings.Cut(s, "=")
		if !ok || !path.IsAbs(dst) {
			return fmt.Errorf("want /image/path=host/path, got %q", s)
		}
		cfg.files[dst] = src
		return nil
	})
	fl.Func("dir", "/image/path of an empty directory to add (repeatable).", func(s string) error {
		if !path.IsAbs(s) || path.Clean(s) == "/" {
			return fmt.Errorf("want /image/path, got %q", s)
		}
		cfg.dirs = append(cfg.dirs, path.Clean(s))
		return nil
	})
	fl.Func("chown", "image-path=uid:gid: the owner of a path and of everything under it (repeatable).", func(s string) error {
		p, ids, ok := strings.Cut(s, "=")
		uid, gid, ok2 := strings.Cut(ids, ":")
		var o owner
		var err1, err2 error
		o.uid, err1 = strconv.Atoi(uid)
		o.gid, err2 = strconv.Atoi(gid)
		if !ok || !ok2 || !path.IsAbs(p) || err1 != nil || err2 != nil || o.uid < 0 || o.gid < 0 {
			return fmt.Errorf("want /image/path=uid:gid, got %q", s)
		}
		cfg.owners[path.Clean(p)] = o
		return nil
	})
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if cfg.out == "" || cfg.name == "" || len(cfg.entrypoint) == 0 {
		fmt.Fprintln(stderr, "imagebuild: -out, -name and -entrypoint are required")
		return 2
	}
	digest, err := build(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "imagebuild: %s: %v\n", cfg.out, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s %s %s\n", cfg.name, cfg.platform, digest)
	return 0
}

// build writes the archive, its SBOM and its digest, and returns the
// digest.
func build(cfg config) (v1.Hash, error) {
	img, err := image(cfg)
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("digest: %w", err)
	}
	bom, err := sbom(cfg, digest)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := writeLayout(cfg, img); err != nil {
		return v1.Hash{}, err
	}
	base := strings.TrimSuffix(cfg.out, ".tar")
	if err := writeFile(base+".cdx.json", bom); err != nil {
		return v1.Hash{}, err
	}
	return digest, writeFile(base+".digest", []byte(digest.String()+"\n"))
}

// image returns the image of cfg.
func image(cfg config) (v1.Image, error) {
	goos, arch, ok := strings.Cut(cfg.platform, "/")
	if !ok {
		return nil, fmt.Errorf("platform %q is not os/architecture", cfg.platform)
	}
	layerTar, err := rootfs(cfg)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("make layer: %w", err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{CreatedBy: "imagebuild (make images)"}})
	if err != nil {
		return nil, fmt.Errorf("add layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = goos, arch
	cf.Config.User = cfg.user
	cf.Config.Entrypoint = cfg.entrypoint
	cf.Config.Cmd = cfg.cmd
	cf.Config.WorkingDir = cfg.workdir
	cf.Config.Env = []string{"PATH=/bin"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	return img, nil
}

// writeLayout writes img as the OCI archive cfg.out.
func writeLayout(cfg config, img v1.Image) error {
	goos, arch, _ := strings.Cut(cfg.platform, "/")
	dir, err := os.MkdirTemp(filepath.Dir(cfg.out), ".imagebuild-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write layout: %w", err)
	}
	if err := p.AppendImage(img,
		layout.WithAnnotations(map[string]string{annotationImageName: cfg.name, "org.opencontainers.image.ref.name": cfg.name}),
		layout.WithPlatform(v1.Platform{OS: goos, Architecture: arch}),
	); err != nil {
		return fmt.Errorf("write image: %w", err)
	}
	return archive(dir, cfg.out)
}

// rootfs returns the layer: the files and directories of cfg, the
// directories above them, /tmp and the user database, sorted, owned by
// root unless cfg says otherwise, with a zero time so that the same
// binaries make the same image.
func rootfs(cfg config) ([]byte, error) {
	type entry struct {
		hdr  tar.Header
		body []byte
	}
	entries := map[string]entry{
		"etc/passwd": {tar.Header{Typeflag: tar.TypeReg, Mode: 0o644}, []byte(passwd)},
		"etc/group":  {tar.Header{Typeflag: tar.TypeReg, Mode: 0o644}, []byte(group)},
		"tmp/":       {tar.Header{Typeflag: tar.TypeDir, Mode: 0o1777}, nil},
	}
	for _, d := range cfg.dirs {
		entries[strings.TrimPrefix(d, "/")+"/"] = entry{tar.Header{Typeflag: tar.TypeDir, Mode: 0o755}, nil}
	}
	for dst, src := range cfg.files {
		body, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		mode := int64(0o644)
		if fi.Mode()&0o111 != 0 {
			mode = 0o755
		}
		entries[strings.TrimPrefix(dst, "/")] = entry{tar.Header{Typeflag: tar.TypeReg, Mode: mode}, body}
	}
	for name := range entries {
		for d := path.Dir(strings.TrimSuffix(name, "/")); d != "."; d = path.Dir(d) {
			if _, ok := entries[d+"/"]; !ok {
				entries[d+"/"] = entry{tar.Header{Typeflag: tar.TypeDir, Mode: 0o755}, nil}
			}
		}
	}
	for p, o := range cfg.owners {
		found := false
		for name, e := range entries {
			if n := "/" + strings.TrimSuffix(name, "/"); n == p || strings.HasPrefix(n, p+"/") {
				e.hdr.Uid, e.hdr.Gid = o.uid, o.gid
				entries[name], found = e, true
			}
		}
		if !found {
			return nil, fmt.Errorf("chown %s: no such path in the image", p)
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range entries {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		e := entries[name]
		e.hdr.Name, e.hdr.Size, e.hdr.Format = name, int64(len(e.body)), tar.FormatPAX
		if err := tw.WriteHeader(&e.hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// archive writes the layout directory dir as the tar file out, atomically.
func archive(dir, out string) error {
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if d.IsDir() {
			hdr.Name, hdr.Mode, hdr.Typeflag = hdr.Name+"/", 0o755, tar.TypeDir
			return tw.WriteHeader(hdr)
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		hdr.Size = int64(len(body))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(body)
		return err
	})
	if err != nil {
		return errors.Join(fmt.Errorf("archive layout: %w", err), f.Close())
	}
	if err := errors.Join(tw.Close(), f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	return os.Rename(tmp, out)
}

// writeFile writes data to name atomically.
func writeFile(name string, data []byte) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
