package main

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
)

type order struct {
	ID     int    `json:"id,omitempty"`
	Client int    `json:"client"`
	Item   string `json:"item"`
}

// shop is the service under the game day: it makes orders and ships them,
// and counts how many times it did each, which must be once.
type shop struct {
	mu        sync.Mutex
	orders    map[string]int // item → times made
	shipments map[string]int // order id → times shipped
	next      int
}

func newShop() *shop {
	return &shop{orders: map[string]int{}, shipments: map[string]int{}}
}

func (s *shop) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", s.createOrder)
	mux.HandleFunc("POST /shipments", s.ship)
	return mux
}

func (s *shop) createOrder(w http.ResponseWriter, r *http.Request) {
	var o order
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<10)).Decode(&o); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.next++
	o.ID = s.next
	s.orders[o.Item]++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(o)
}

func (s *shop) ship(w http.ResponseWriter, r *http.Request) {
	id, err := io.ReadAll(io.LimitReader(r.Body, 64))
	if err != nil || len(id) == 0 {
		http.Error(w, "which order?", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.shipments[string(id)]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// twice counts the entries of m made more than once.
func (s *shop) twice(m map[string]int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, times := range m {
		if times > 1 {
			n++
		}
	}
	return n
}

func (s *shop) count(m map[string]int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(m)
}
