package main

import (
	"math/rand/v2"
	"sync"
	"time"
)

// inFlight is the set of accounts whose create request has been sent and
// which are not COMPLETED yet: what a partner polls right after submitting.
type inFlight struct {
	mu  sync.Mutex
	ids []string       // dense, so a random pick is O(1)
	pos map[string]int // id → index in ids
}

func newInFlight() *inFlight { return &inFlight{pos: map[string]int{}} }

func (s *inFlight) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pos[id]; ok {
		return
	}
	s.pos[id] = len(s.ids)
	s.ids = append(s.ids, id)
}

// remove swaps the last id into the removed one's slot.
func (s *inFlight) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.pos[id]
	if !ok {
		return
	}
	last := len(s.ids) - 1
	s.ids[i] = s.ids[last]
	s.pos[s.ids[i]] = i
	s.ids = s.ids[:last]
	delete(s.pos, id)
}

// pick returns a random in-flight id, false when none is.
func (s *inFlight) pick() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ids) == 0 {
		return "", false
	}
	return s.ids[rand.IntN(len(s.ids))], true
}

// readerStats is one open-loop status reader's record.
type readerStats struct {
	mu        sync.Mutex
	Latencies []time.Duration `json:"-"`
	Count     int             `json:"count"`
	Errors    int64           `json:"errors"`
	Skipped   int64           `json:"skipped_ticks"` // nothing to read at that tick
	P50       time.Duration   `json:"p50_ns"`
	P99       time.Duration   `json:"p99_ns"`
	Max       time.Duration   `json:"max_ns"`
}

func (s *readerStats) record(d time.Duration) {
	s.mu.Lock()
	s.Latencies = append(s.Latencies, d)
	s.mu.Unlock()
}

func (s *readerStats) fail() {
	s.mu.Lock()
	s.Errors++
	s.mu.Unlock()
}

func (s *readerStats) skip() {
	s.mu.Lock()
	s.Skipped++
	s.mu.Unlock()
}

// finish sorts the latencies and fills the percentiles; call once the
// reader has stopped.
func (s *readerStats) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	sortDurations(s.Latencies)
	s.Count = len(s.Latencies)
	s.P50, s.P99, s.Max = percentile(s.Latencies, 0.50), percentile(s.Latencies, 0.99), percentile(s.Latencies, 1)
}
