package calin

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// V2 code and reason values. 0/"success" is the vendor's (calin-api-v2
// lib/repo.ts and its tests); the others are the simulator's choice, as the
// client code shows none.
const (
	V2CodeOK   = 0
	V2ReasonOK = "success"

	// V2CodeAuthFailed answers a login with a wrong userId, password or
	// company (with "result": null, so no token).
	V2CodeAuthFailed = 1
	// V2CodeMeterUnknown answers a create naming a meter not in
	// Config.Meters.
	V2CodeMeterUnknown = 2
	// V2CodeTaskUnknown answers a get of an id the endpoint's family does
	// not have.
	V2CodeTaskUnknown = 3
	// V2CodeBadRequest answers a body missing a field, or naming another
	// company or customer.
	V2CodeBadRequest = 4
)

// V2 task statuses (CalinApiV2TaskDataResponse: Processing | Success |
// Failed | (Token) Rejected).
const (
	V2StatusProcessing    = 0
	V2StatusSuccess       = 1
	V2StatusFailed        = 2
	V2StatusTokenRejected = 3
)

// V2 protocol ids the client uses (calin-api-v2 outgoing.ts).
const (
	V2ProtocolReadCredit     = 39
	V2ProtocolReadVoltage    = 5
	V2ProtocolReadPower      = 11
	V2ProtocolReadCurrent    = 8
	V2ProtocolReadPowerLimit = 46
	V2ProtocolReadVersion    = 45
	V2ProtocolReadDate       = 29
	V2ProtocolSetDate        = 10000
	V2ProtocolTurnOn         = 20000
	V2ProtocolTurnOff        = 20001
	V2ProtocolToken          = 30000
)

// v2Names are the task names by protocol id (CalinApiV2DataItem; 47 and 43
// from its comments). Other ids are named "Protocol <id>".
var v2Names = map[int]string{
	V2ProtocolReadCredit:     "Current Credit Balance",
	V2ProtocolReadVoltage:    "Phase-A Voltage",
	V2ProtocolReadPower:      "Power",
	V2ProtocolReadCurrent:    "Phase-A Current(A)",
	V2ProtocolReadPowerLimit: "Maximum power threshold",
	V2ProtocolReadVersion:    "Meter Firmware Version",
	V2ProtocolReadDate:       "Clock(time)",
	47:                       "The Number Of Power Down",
	43:                       "Special status identifier",
	V2ProtocolSetDate:        "Clock(time)",
	V2ProtocolTurnOn:         "Relay On/Off",
	V2ProtocolTurnOff:        "Relay On/Off",
	V2ProtocolToken:          "Token",
}

// v2Envelope is every V2 answer: {"code","reason","result"}.
type v2Envelope struct {
	Code   int    `json:"code"`
	Reason string `json:"reason"`
	Result any    `json:"result"`
}

// v2Login is the login body.
type v2Login struct {
	UserID   flexString `json:"userId"`
	Password flexString `json:"password"`
	Company  flexString `json:"company"`
}

// v2CreateItem is one element of a create body.
type v2CreateItem struct {
	MeterID    flexString `json:"meterId"`
	ProtocolID flexString `json:"protocolId"`
	Data       flexString `json:"data"`
	CustomerID flexString `json:"customerId"`
	Company    flexString `json:"company"`
}

// v2Get is a get body.
type v2Get struct {
	ID      flexString `json:"id"`
	Lang    flexString `json:"lang"`
	Company flexString `json:"company"`
}

// v2TaskRow is a task in a get answer.
type v2TaskRow struct {
	Name   string `json:"name"`
	Status int    `json:"status"`
	Data   any    `json:"data"`
}

// v2Routes maps V2's lower-cased paths to their handlers.
func v2Routes() map[string]route {
	const p = "/api/remotemetertask/"
	return map[string]route{
		"/api/user/login":       {"", (*Sim).v2Login},
		p + "createreadingtask": {KindReading, (*Sim).v2Create},
		p + "createcontroltask": {KindControl, (*Sim).v2Create},
		p + "createsettingtask": {KindWrite, (*Sim).v2Create},
		p + "createtokentask":   {KindToken, (*Sim).v2Create},
		p + "getreadingtask":    {KindReading, (*Sim).v2Get},
		p + "getcontroltask":    {KindControl, (*Sim).v2Get},
		p + "getsettingtask":    {KindWrite, (*Sim).v2Get},
		p + "gettokentask":      {KindToken, (*Sim).v2Get},
	}
}

// v2Answer writes env and records its code.
func v2Answer(w http.ResponseWriter, c *Call, env v2Envelope) {
	c.Code = strconv.Itoa(env.Code)
	writeJSON(w, http.StatusOK, env)
}

// v2Login serves /API/User/Login: a bearer token for the configured
// credentials.
func (s *Sim) v2Login(w http.ResponseWriter, r *http.Request, _ Kind, c *Call) {
	var req v2Login
	if err := decode(r, &req); err != nil {
		s.badRequest(w, err)
		return
	}
	if string(req.UserID) != s.cfg.User || string(req.Password) != s.cfg.Password || string(req.Company) != s.cfg.Company {
		v2Answer(w, c, v2Envelope{Code: V2CodeAuthFailed, Reason: "user id, password or company error"})
		return
	}
	token := s.issueToken(string(req.UserID))
	v2Answer(w, c, v2Envelope{Code: V2CodeOK, Reason: V2ReasonOK, Result: map[string]string{"token": token}})
}

// issueToken returns a new HS256 JWT for user whose exp claim is now plus
// Config.TokenTTL, and remembers when it expires.
func (s *Sim) issueToken(user string) string {
	now := s.clk.Now()
	exp := now.Add(s.cfg.TokenTTL)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextJTI++
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims, _ := json.Marshal(map[string]any{
		"sub":     user,
		"company": s.cfg.Company,
		"iat":     now.Unix(),
		"exp":     exp.Unix(),
		"jti":     strconv.Itoa(s.nextJTI),
	})
	signed := header + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, s.secret)
	mac.Write([]byte(signed))
	token := signed + "." + enc.EncodeToString(mac.Sum(nil))
	s.sessions[token] = exp
	return token
}

// v2Auth checks the bearer token of r. When it is missing, unknown or
// expired, it returns false and the WWW-Authenticate challenge of the 401.
func (s *Sim) v2Auth(r *http.Request) (challenge string, ok bool) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "Bearer", false
	}
	now := s.clk.Now()
	s.mu.Lock()
	exp, known := s.sessions[strings.TrimSpace(token)]
	s.mu.Unlock()
	switch {
	case !known:
		return `Bearer error="invalid_token"`, false
	case !now.Before(exp):
		return `Bearer error="invalid_token", error_description="The token expired"`, false
	}
	return "", true
}

// unauthorized answers 401 with challenge, and no body.
func unauthorized(w http.ResponseWriter, challenge string) {
	w.Header().Set("WWW-Authenticate", challenge)
	w.WriteHeader(http.StatusUnauthorized)
}

// v2Create serves Create{Reading,Control,Setting,Token}Task: it creates a
// task per element of the body at once and answers their ids after
// Config.SlowCreate.
func (s *Sim) v2Create(w http.ResponseWriter, r *http.Request, kind Kind, c *Call) {
	answer := s.v2CreateTasks(r, kind, c)
	if !s.waitSlowCreate(r) {
		return
	}
	answer(w)
}

// v2CreateTasks creates the tasks a create call asks for and returns how to
// answer it.
func (s *Sim) v2CreateTasks(r *http.Request, kind Kind, c *Call) func(http.ResponseWriter) {
	if challenge, ok := s.v2Auth(r); !ok {
		return func(w http.ResponseWriter) { unauthorized(w, challenge) }
	}
	var items []v2CreateItem
	if err := decode(r, &items); err != nil {
		return func(w http.ResponseWriter) { s.badRequest(w, err) }
	}
	fail := func(code int, reason string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) { v2Answer(w, c, v2Envelope{Code: code, Reason: reason}) }
	}
	if len(items) == 0 {
		return fail(V2CodeBadRequest, "no task in the request")
	}
	nts := make([]newTask, 0, len(items))
	for i, it := range items {
		if c.Meter == "" {
			c.Meter = string(it.MeterID)
		}
		pid, err := strconv.Atoi(string(it.ProtocolID))
		var problem string
		switch {
		case it.MeterID == "":
			problem = "meterId is required"
		case it.ProtocolID == "":
			problem = "protocolId is required"
		case err != nil:
			problem = fmt.Sprintf("protocolId %q is not a number", it.ProtocolID)
		case (kind == KindToken || kind == KindWrite) && it.Data == "":
			problem = "data is required"
		case string(it.Company) != s.cfg.Company:
			problem = fmt.Sprintf("company %q is not this account's", it.Company)
		case s.cfg.CustomerID != "" && string(it.CustomerID) != s.cfg.CustomerID:
			problem = fmt.Sprintf("customerId %q is not this account's", it.CustomerID)
		}
		if problem != "" {
			return fail(V2CodeBadRequest, fmt.Sprintf("task %d: %s", i, problem))
		}
		if !s.knownMeter(string(it.MeterID)) {
			return fail(V2CodeMeterUnknown, fmt.Sprintf("meter %s does not exist", it.MeterID))
		}
		nt := newTask{kind: kind, meter: string(it.MeterID), command: strconv.Itoa(pid), protocolID: pid, data: string(it.Data)}
		if kind == KindToken {
			nt.token = nt.data
		}
		nts = append(nts, nt)
	}
	tasks, _ := s.create(nts) // V2 never rejects at create
	ids := make([]map[string]string, len(tasks))
	for i, t := range tasks {
		ids[i] = map[string]string{"id": t.ID}
		c.TaskIDs = append(c.TaskIDs, t.ID)
	}
	return func(w http.ResponseWriter) {
		v2Answer(w, c, v2Envelope{Code: V2CodeOK, Reason: V2ReasonOK, Result: ids})
	}
}

// v2Get serves Get{Reading,Control,Setting,Token}Task, after
// Config.SlowPoll.
func (s *Sim) v2Get(w http.ResponseWriter, r *http.Request, kind Kind, c *Call) {
	if !s.waitSlowPoll(r) {
		return
	}
	if challenge, ok := s.v2Auth(r); !ok {
		unauthorized(w, challenge)
		return
	}
	var req v2Get
	if err := decode(r, &req); err != nil {
		s.badRequest(w, err)
		return
	}
	switch {
	case req.ID == "":
		v2Answer(w, c, v2Envelope{Code: V2CodeBadRequest, Reason: "id is required"})
		return
	case string(req.Company) != s.cfg.Company:
		v2Answer(w, c, v2Envelope{Code: V2CodeBadRequest, Reason: fmt.Sprintf("company %q is not this account's", req.Company)})
		return
	}
	id := string(req.ID)
	c.TaskIDs = []string{id}
	t, ok := s.poll(id, kind)
	if !ok {
		v2Answer(w, c, v2Envelope{Code: V2CodeTaskUnknown, Reason: fmt.Sprintf("task %s does not exist", id)})
		return
	}
	c.Meter = t.Meter
	row := v2TaskRow{Name: v2Name(t.ProtocolID), Data: ""}
	switch t.Status {
	case StatusPending:
		row.Status = V2StatusProcessing
	case StatusSuccess:
		row.Status, row.Data = V2StatusSuccess, s.v2Data(t)
	case StatusFailed:
		row.Status = V2StatusFailed
	case StatusTokenRejected:
		row.Status = V2StatusTokenRejected
	}
	v2Answer(w, c, v2Envelope{Code: V2CodeOK, Reason: V2ReasonOK, Result: map[string]any{"data": []v2TaskRow{row}}})
}

// v2Name is the name a task of protocol id pid reports.
func v2Name(pid int) string {
	if n, ok := v2Names[pid]; ok {
		return n
	}
	return "Protocol " + strconv.Itoa(pid)
}

// v2Data is a succeeded task's data, in the forms the client parses
// (incoming.ts): numbers as strings or numbers, the clock as
// "YYYY-MM-DD HH:mm:ss", the relay as "Connected" / "Disconnected".
func (s *Sim) v2Data(t Task) any {
	switch t.ProtocolID {
	case V2ProtocolReadCredit:
		return "108.8"
	case V2ProtocolReadVoltage:
		return "230.1"
	case V2ProtocolReadPower:
		return "0.35"
	case V2ProtocolReadCurrent:
		return "1.52"
	case V2ProtocolReadPowerLimit:
		return 5000
	case V2ProtocolReadVersion:
		return "V2.01"
	case V2ProtocolReadDate:
		return t.Done.Format(time.DateTime)
	case V2ProtocolSetDate:
		return t.Data
	case V2ProtocolTurnOn:
		return "Connected"
	case V2ProtocolTurnOff:
		return "Disconnected"
	}
	return ""
}
