package calin

import (
	"fmt"
	"net/http"
)

// V1 ResultCode and Reason values. "00"/"OK" and "99"/"other error" are
// the vendor's (calin-api-v1 lib/repo.ts and its tests); the others are the
// simulator's choice, as the client code shows none.
const (
	V1ResultOK            = "00"
	V1ReasonOK            = "OK"
	V1ResultTokenRejected = "99"
	V1ReasonTokenRejected = "other error"

	// V1ResultAuthFailed answers wrong CompanyName, UserName or Password.
	V1ResultAuthFailed = "01"
	v1ReasonAuthFailed = "company name, user name or password error"
	// V1ResultMeterUnknown answers a MeterNo not in Config.Meters.
	V1ResultMeterUnknown = "02"
	// V1ResultTaskUnknown answers a TaskNo the endpoint's family does not
	// have.
	V1ResultTaskUnknown = "03"
	// V1ResultBadRequest answers a body without a field the endpoint needs.
	V1ResultBadRequest = "04"
)

// V1 Result.Status values of a finished task; a running task's is null.
const (
	V1StatusTrue  = "True"
	V1StatusFalse = "False"
)

// v1Request is any V1 body: the credentials and the endpoint's fields.
// Field names match without regard to case, as ASP.NET binds them.
type v1Request struct {
	CompanyName flexString
	UserName    flexString
	Password    flexString
	MeterNo     flexString
	DataItem    flexString
	Data        flexString
	Token       flexString
	TaskNo      flexString
}

// v1Response is every V1 answer (CalinApiV1CommResponse).
type v1Response struct {
	ResultCode string    `json:"ResultCode"`
	Reason     string    `json:"Reason"`
	Result     *v1Result `json:"Result,omitempty"`
}

// v1Result is a task as V1 reports it.
type v1Result struct {
	TaskNo   string  `json:"TaskNo"`
	Status   *string `json:"Status"` // null while running
	DataItem string  `json:"DataItem"`
	Data     string  `json:"Data"`
}

// v1Routes maps V1's lower-cased paths to their handlers.
func v1Routes() map[string]route {
	return map[string]route{
		"/comm_remotereading":     {KindReading, (*Sim).v1Create},
		"/comm_remotecontrol":     {KindControl, (*Sim).v1Create},
		"/comm_remotewrite":       {KindWrite, (*Sim).v1Create},
		"/comm_remotetoken":       {KindToken, (*Sim).v1Create},
		"/comm_remotereadingtask": {KindReading, (*Sim).v1Poll},
		"/comm_remotecontroltask": {KindControl, (*Sim).v1Poll},
		"/comm_remotewritetask":   {KindWrite, (*Sim).v1Poll},
		"/comm_remotetokentask":   {KindToken, (*Sim).v1Poll},
	}
}

// v1Authorized reports whether req carries the configured credentials.
func (s *Sim) v1Authorized(req v1Request) bool {
	return string(req.CompanyName) == s.cfg.Company &&
		string(req.UserName) == s.cfg.User &&
		string(req.Password) == s.cfg.Password
}

// v1Answer writes resp and records its code.
func v1Answer(w http.ResponseWriter, c *Call, resp v1Response) {
	c.Code = resp.ResultCode
	writeJSON(w, http.StatusOK, resp)
}

// v1Create serves COMM_Remote{Reading,Control,Write,Token}: it creates a
// task at once and answers its TaskNo after Config.SlowCreate.
func (s *Sim) v1Create(w http.ResponseWriter, r *http.Request, kind Kind, c *Call) {
	resp, err := s.v1CreateTask(r, kind, c)
	if !s.waitSlowCreate(r) {
		return
	}
	if err != nil {
		s.badRequest(w, err)
		return
	}
	v1Answer(w, c, resp)
}

// v1CreateTask creates the task a create call asks for and returns the
// answer; the error is a body that is not JSON.
func (s *Sim) v1CreateTask(r *http.Request, kind Kind, c *Call) (v1Response, error) {
	var req v1Request
	if err := decode(r, &req); err != nil {
		return v1Response{}, err
	}
	if !s.v1Authorized(req) {
		return v1Response{ResultCode: V1ResultAuthFailed, Reason: v1ReasonAuthFailed}, nil
	}
	nt := newTask{kind: kind, meter: string(req.MeterNo), command: string(req.DataItem)}
	c.Meter = nt.meter
	var missing string
	switch {
	case req.MeterNo == "":
		missing = "MeterNo"
	case kind == KindToken && req.Token == "":
		missing = "Token"
	case kind != KindToken && req.DataItem == "":
		missing = "DataItem"
	case kind == KindWrite && req.Data == "":
		missing = "Data"
	}
	if missing != "" {
		return v1Response{ResultCode: V1ResultBadRequest, Reason: missing + " is required"}, nil
	}
	switch kind {
	case KindToken:
		nt.command, nt.token = "Token", string(req.Token)
	case KindWrite:
		nt.data = string(req.Data)
	}
	if !s.knownMeter(nt.meter) {
		return v1Response{ResultCode: V1ResultMeterUnknown, Reason: fmt.Sprintf("meter %s does not exist", nt.meter)}, nil
	}
	tasks, err := s.create([]newTask{nt})
	if err != nil {
		return v1Response{ResultCode: V1ResultTokenRejected, Reason: V1ReasonTokenRejected}, nil
	}
	c.TaskIDs = []string{tasks[0].ID}
	return v1Response{ResultCode: V1ResultOK, Reason: V1ReasonOK, Result: &v1Result{TaskNo: tasks[0].ID, DataItem: nt.command}}, nil
}

// v1Poll serves COMM_Remote{Reading,Control,Write,Token}Task, after
// Config.SlowPoll.
func (s *Sim) v1Poll(w http.ResponseWriter, r *http.Request, kind Kind, c *Call) {
	if !s.waitSlowPoll(r) {
		return
	}
	var req v1Request
	if err := decode(r, &req); err != nil {
		s.badRequest(w, err)
		return
	}
	if !s.v1Authorized(req) {
		v1Answer(w, c, v1Response{ResultCode: V1ResultAuthFailed, Reason: v1ReasonAuthFailed})
		return
	}
	if req.TaskNo == "" {
		v1Answer(w, c, v1Response{ResultCode: V1ResultBadRequest, Reason: "TaskNo is required"})
		return
	}
	id := string(req.TaskNo)
	c.TaskIDs = []string{id}
	t, ok := s.poll(id, kind)
	if !ok {
		v1Answer(w, c, v1Response{ResultCode: V1ResultTaskUnknown, Reason: fmt.Sprintf("task %s does not exist", id)})
		return
	}
	c.Meter = t.Meter
	res := &v1Result{TaskNo: t.ID, DataItem: t.Command}
	switch t.Status {
	case StatusTokenRejected:
		v1Answer(w, c, v1Response{ResultCode: V1ResultTokenRejected, Reason: V1ReasonTokenRejected})
		return
	case StatusSuccess:
		st := V1StatusTrue
		res.Status, res.Data = &st, s.v1Data(t)
	case StatusFailed:
		st := V1StatusFalse
		res.Status = &st
	}
	v1Answer(w, c, v1Response{ResultCode: V1ResultOK, Reason: V1ReasonOK, Result: res})
}

// v1Data is a succeeded task's Data, in the forms the client parses
// (incoming.ts): the credit with the relay state, a number and its unit,
// the date as "yy-mm-dd ww"; empty for controls, writes and tokens.
func (s *Sim) v1Data(t Task) string {
	switch t.Command {
	case "Current Credit Register":
		relay := "ON"
		if !s.relayOn(t.Meter, t.Done) {
			relay = "OFF"
		}
		return "108.8," + relay
	case "Voltage", "VoltageA", "VoltageB", "VoltageC":
		return "230.1 V"
	case "Power":
		return "350 W"
	case "Current", "CurrentA", "CurrentB", "CurrentC":
		return "1.52 A"
	case "Maximum power threshold":
		return "5000 W"
	case "Version":
		return "V2.01"
	case "Date":
		if t.Kind == KindWrite {
			return ""
		}
		return fmt.Sprintf("%s %02d", t.Done.Format("06-01-02"), int(t.Done.Weekday()))
	}
	return ""
}
