package reloader

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// stateFiles are the names of the files of the state directory, which a
// StateMirror holds a copy of.
func stateFiles() [2]string { return [2]string{acceptedFile, rejectedFile} }

// maxMirroredFile bounds each file of the state directory read back for
// the StateMirror: far more than a Secret holds, gzipped.
const maxMirroredFile = 64 << 20

// StateMirror keeps a copy of the state directory's files (the last
// accepted state and the rejection recorded after it) where they outlive
// the pod: a Secret, say. The Reloader never waits for it to write.
type StateMirror interface {
	// Load returns the files the mirror holds, by name; none when it
	// holds none. It bounds its own wait.
	Load(ctx context.Context) (map[string][]byte, error)
	// Store hands the files the state directory holds now, by name (a
	// file missing from files is gone), to be copied. It must not block.
	Store(files map[string][]byte)
}

// restoreMirrored writes into StateDir the files the StateMirror holds,
// when StateDir holds neither: a new pod whose emptyDir went with the
// last one. A state read locally wins over the mirror's, which can only
// be older. Done once.
func (r *Reloader) restoreMirrored(ctx context.Context) {
	if r.opts.StateMirror == nil || r.state == nil || r.state.mirrorRead {
		return
	}
	r.state.mirrorRead = true
	for _, name := range stateFiles() {
		_, err := os.Lstat(filepath.Join(r.state.dir, name))
		if err == nil {
			return
		}
		if !errors.Is(err, fs.ErrNotExist) {
			r.stateError("look for the state", err)
			return
		}
	}
	files, err := r.opts.StateMirror.Load(ctx)
	if err != nil {
		r.stateError("read the state mirrored", err)
		return
	}
	var restored []string
	for _, name := range stateFiles() {
		b, ok := files[name]
		if !ok {
			continue
		}
		if err := r.state.replace(name, func(w io.Writer) error {
			_, err := w.Write(b)
			return err
		}); err != nil {
			r.stateError("write the state mirrored", err)
			return
		}
		restored = append(restored, name)
	}
	if len(restored) > 0 {
		r.logger.Info("state dir empty: the state mirrored written into it", "dir", r.state.dir, "files", restored)
	}
}

// mirrorState hands the files of StateDir to the StateMirror, after they
// changed.
func (r *Reloader) mirrorState() {
	if r.opts.StateMirror == nil {
		return
	}
	files := map[string][]byte{}
	for _, name := range stateFiles() {
		b, err := readRegular(filepath.Join(r.state.dir, name), maxMirroredFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			r.stateError("read the state to mirror", err)
			return
		default:
			files[name] = b
		}
	}
	r.opts.StateMirror.Store(files)
}
