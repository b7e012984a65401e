package reticulum

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// PathEntry is how to reach a destination: the next hop (the transport node
// that forwards to it, or the destination itself when it is one hop away),
// the number of hops, the interface the announce came in on, and when it was
// learned.
type PathEntry struct {
	NextHop   Hash
	Hops      uint8
	Interface string
	Updated   time.Time
	Expires   time.Time
}

// KnownDestination is what an announce taught about a destination: its
// identity's public key, the announce's application data and, when it
// announced one, its latest ratchet.
type KnownDestination struct {
	PublicKey       []byte
	AppData         []byte
	Ratchet         []byte
	RatchetReceived time.Time
	Updated         time.Time
}

// pathExpiry is how long a path stays usable: the reference's PATHFINDER_E.
const pathExpiry = 7 * 24 * time.Hour

// ratchetExpiry is how long an announced ratchet is used: the reference's
// RATCHET_EXPIRY.
const ratchetExpiry = 30 * 24 * time.Hour

// Store is the path table and the known-identities store of a [Node]. With
// a file path it is loaded at start and written back when it changes, so
// both survive a restart.
type Store struct {
	mu    sync.Mutex
	path  string
	dirty bool
	paths map[Hash]PathEntry
	known map[Hash]KnownDestination
}

// storeFile is the persisted form of a Store.
type storeFile struct {
	Paths map[string]storedPath  `json:"paths"`
	Known map[string]storedKnown `json:"known"`
}

type storedPath struct {
	NextHop   string    `json:"next_hop"`
	Hops      uint8     `json:"hops"`
	Interface string    `json:"interface,omitempty"`
	Updated   time.Time `json:"updated"`
	Expires   time.Time `json:"expires"`
}

type storedKnown struct {
	PublicKey       string    `json:"public_key"`
	AppData         string    `json:"app_data,omitempty"`
	Ratchet         string    `json:"ratchet,omitempty"`
	RatchetReceived time.Time `json:"ratchet_received,omitzero"`
	Updated         time.Time `json:"updated"`
}

// OpenStore loads the store at path, or starts an empty one if the file does
// not exist. An empty path keeps the store in memory only.
func OpenStore(path string) (*Store, error) {
	s := &Store{path: path, paths: map[Hash]PathEntry{}, known: map[Hash]KnownDestination{}}
	if path == "" {
		return s, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	var f storeFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	for k, v := range f.Paths {
		h, err1 := ParseHash(k)
		nh, err2 := ParseHash(v.NextHop)
		if err1 != nil || err2 != nil {
			continue
		}
		s.paths[h] = PathEntry{NextHop: nh, Hops: v.Hops, Interface: v.Interface, Updated: v.Updated, Expires: v.Expires}
	}
	for k, v := range f.Known {
		h, err := ParseHash(k)
		pub, err2 := hex.DecodeString(v.PublicKey)
		app, err3 := hex.DecodeString(v.AppData)
		r, err4 := hex.DecodeString(v.Ratchet)
		if err != nil || err2 != nil || err3 != nil || err4 != nil || len(pub) != PublicKeyLen {
			continue
		}
		kd := KnownDestination{PublicKey: pub, RatchetReceived: v.RatchetReceived, Updated: v.Updated}
		if len(app) > 0 {
			kd.AppData = app
		}
		if len(r) == RatchetLen {
			kd.Ratchet = r
		}
		s.known[h] = kd
	}
	return s, nil
}

// Path returns the path to dest if one is known and has not expired at now.
func (s *Store) Path(dest Hash, now time.Time) (PathEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.paths[dest]
	if !ok || now.After(p.Expires) {
		return PathEntry{}, false
	}
	return p, true
}

// SetPath records a path.
func (s *Store) SetPath(dest Hash, p PathEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths[dest] = p
	s.dirty = true
}

// DropPath forgets the path to dest.
func (s *Store) DropPath(dest Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.paths[dest]; ok {
		delete(s.paths, dest)
		s.dirty = true
	}
}

// Known returns what is known about dest.
func (s *Store) Known(dest Hash) (KnownDestination, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.known[dest]
	return k, ok
}

// Remember records a destination's public key and app data, and its ratchet
// when the announce carried one.
func (s *Store) Remember(dest Hash, pub, appData, ratchet []byte, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.known[dest]
	k.PublicKey = append([]byte{}, pub...)
	k.AppData = append([]byte(nil), appData...)
	if ratchet != nil {
		k.Ratchet = append([]byte{}, ratchet...)
		k.RatchetReceived = now
	}
	k.Updated = now
	s.known[dest] = k
	s.dirty = true
}

// Save writes the store to its file if it changed since the last save.
func (s *Store) Save() error {
	s.mu.Lock()
	if !s.dirty || s.path == "" {
		s.mu.Unlock()
		return nil
	}
	f := storeFile{Paths: map[string]storedPath{}, Known: map[string]storedKnown{}}
	for h, p := range s.paths {
		f.Paths[h.String()] = storedPath{NextHop: p.NextHop.String(), Hops: p.Hops, Interface: p.Interface, Updated: p.Updated, Expires: p.Expires}
	}
	for h, k := range s.known {
		f.Known[h.String()] = storedKnown{PublicKey: hex.EncodeToString(k.PublicKey), AppData: hex.EncodeToString(k.AppData),
			Ratchet: hex.EncodeToString(k.Ratchet), RatchetReceived: k.RatchetReceived, Updated: k.Updated}
	}
	s.dirty = false
	s.mu.Unlock()
	err := writeStoreFile(s.path, f)
	if err != nil {
		s.mu.Lock()
		s.dirty = true
		s.mu.Unlock()
	}
	return err
}

func writeStoreFile(path string, f storeFile) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
