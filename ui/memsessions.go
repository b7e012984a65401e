package ui

import (
	"context"
	"sync"
	"time"

	"github.com/heraldmq/herald"
)

// memorySessions keeps sessions in this process's memory: a
// herald.SessionStore for a page without a store (Config.Sessions nil),
// whose sessions end when the process does and which no other node knows.
type memorySessions struct {
	mu       sync.Mutex
	byID     map[string]*herald.Session
	byTenant map[string]map[string]*herald.Session
}

var _ herald.SessionStore = (*memorySessions)(nil)

func newMemorySessions() *memorySessions {
	return &memorySessions{byID: map[string]*herald.Session{}, byTenant: map[string]map[string]*herald.Session{}}
}

// CreateSession stores s, after forgetting s.Tenant's sessions that have
// ended and, while it holds perTenant or more, its least recently used.
func (m *memorySessions) CreateSession(_ context.Context, s herald.Session, perTenant int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	own := m.byTenant[s.Tenant]
	for _, old := range own {
		if !old.Expires.After(s.Created) {
			m.forget(old)
		}
	}
	for perTenant > 0 && len(m.byTenant[s.Tenant]) >= perTenant {
		var victim *herald.Session
		for _, old := range m.byTenant[s.Tenant] {
			if victim == nil || old.Used.Before(victim.Used) || old.Used.Equal(victim.Used) && old.ID < victim.ID {
				victim = old
			}
		}
		m.forget(victim)
	}
	own = m.byTenant[s.Tenant]
	if own == nil {
		own = map[string]*herald.Session{}
		m.byTenant[s.Tenant] = own
	}
	m.byID[s.ID], own[s.ID] = &s, &s
	return nil
}

// Session returns session id when it is live at now.
func (m *memorySessions) Session(_ context.Context, id string, now time.Time) (*herald.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.byID[id]
	if !ok {
		return nil, herald.ErrNotFound
	}
	if !s.Expires.After(now) {
		m.forget(s)
		return nil, herald.ErrNotFound
	}
	c := *s
	return &c, nil
}

// TouchSession moves session id's last use and end, when it is live at used.
func (m *memorySessions) TouchSession(_ context.Context, id string, used, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.byID[id]
	if !ok || !s.Expires.After(used) {
		return herald.ErrNotFound
	}
	s.Used, s.Expires = used, expires
	return nil
}

// DeleteSession forgets session id.
func (m *memorySessions) DeleteSession(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.byID[id]; ok {
		m.forget(s)
	}
	return nil
}

// forget removes s; m.mu is held.
func (m *memorySessions) forget(s *herald.Session) {
	delete(m.byID, s.ID)
	own := m.byTenant[s.Tenant]
	delete(own, s.ID)
	if len(own) == 0 {
		delete(m.byTenant, s.Tenant)
	}
}
