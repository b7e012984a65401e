package calin

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldmq/herald/clock"
)

var t0 = time.Date(2026, 8, 5, 12, 0, 0, 0, time.UTC)

// start serves a simulator on a real HTTP server, with a fake clock unless
// cfg has a clock.
func start(t *testing.T, cfg Config) (*Sim, *clock.Fake, string) {
	t.Helper()
	clk := clock.NewFake(t0)
	if cfg.Clock == nil {
		cfg.Clock = clk
	}
	s := New(cfg)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, clk, srv.URL
}

// answer is an HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// fields decodes a JSON object answer into its raw fields.
func (a answer) fields(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d %q: %v", a.status, a.body, err)
	}
	return m
}

// post sends body as JSON the way the clients do (POST, Content-Type and
// Accept application/json, a bearer token when given).
func post(t *testing.T, url, path string, body any, bearer string) answer {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: rb}
}

// ---- V1 ----

// v1Body is a V1 body with the client's admin credentials
// (commApiData in outgoing.ts / incoming.ts) and fields.
func v1Body(fields map[string]any) map[string]any {
	b := map[string]any{"CompanyName": "Acme", "UserName": "admin", "Password": "secret"}
	maps.Copy(b, fields)
	return b
}

// v1Resp is a V1 answer, decoded.
type v1Resp struct {
	ResultCode string
	Reason     string
	Result     *struct {
		TaskNo   string
		Status   *string
		DataItem string
		Data     string
	}
}

func v1Call(t *testing.T, url, path string, fields map[string]any) (v1Resp, answer) {
	t.Helper()
	a := post(t, url, path, v1Body(fields), "")
	if a.status != http.StatusOK {
		t.Fatalf("%s: HTTP %d %s", path, a.status, a.body)
	}
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s: Content-Type %q", path, ct)
	}
	var r v1Resp
	if err := json.Unmarshal(a.body, &r); err != nil {
		t.Fatalf("%s: %v in %s", path, err, a.body)
	}
	return r, a
}

// v1Create creates a task and returns its TaskNo, failing unless created.
func v1Create(t *testing.T, url, path string, fields map[string]any) string {
	t.Helper()
	r, a := v1Call(t, url, path, fields)
	if r.ResultCode != "00" || r.Reason != "OK" || r.Result == nil || r.Result.TaskNo == "" {
		t.Fatalf("%s: %s, want 00/OK with a TaskNo", path, a.body)
	}
	return r.Result.TaskNo
}

func status(r v1Resp) string {
	if r.Result == nil {
		return "<no Result>"
	}
	if r.Result.Status == nil {
		return "null"
	}
	return *r.Result.Status
}

func TestV1ReadingPendingThenSuccess(t *testing.T) {
	s, clk, url := start(t, Config{API: V1, Latency: 10 * time.Second})

	r, a := v1Call(t, url, "/COMM_RemoteReading", map[string]any{"MeterNo": "m-1", "DataItem": "Current Credit Register"})
	if r.ResultCode != "00" || r.Reason != "OK" || r.Result == nil || r.Result.TaskNo == "" {
		t.Fatalf("create: %s", a.body)
	}
	res := a.fields(t)["Result"]
	var shape map[string]json.RawMessage
	_ = json.Unmarshal(res, &shape)
	if string(shape["Status"]) != "null" || string(shape["DataItem"]) != `"Current Credit Register"` || string(shape["Data"]) != `""` {
		t.Fatalf("create Result = %s, want Status null, the DataItem, Data \"\"", res)
	}
	id := r.Result.TaskNo

	poll := map[string]any{"TaskNo": id}
	if r, a := v1Call(t, url, "/COMM_RemoteReadingTask", poll); r.ResultCode != "00" || status(r) != "null" || r.Result.TaskNo != id {
		t.Fatalf("poll before the latency: %s, want Status null", a.body)
	}
	clk.Advance(10*time.Second - time.Millisecond)
	if r, a := v1Call(t, url, "/COMM_RemoteReadingTask", poll); status(r) != "null" {
		t.Fatalf("poll 1 ms before the end: %s, want Status null", a.body)
	}
	clk.Advance(time.Millisecond)
	r, a = v1Call(t, url, "/COMM_RemoteReadingTask", poll)
	if r.ResultCode != "00" || r.Reason != "OK" || status(r) != "True" || r.Result.DataItem != "Current Credit Register" {
		t.Fatalf("poll after the latency: %s, want Status True", a.body)
	}
	// The client splits Data on "," into a number and the relay state.
	credit, relay, ok := strings.Cut(r.Result.Data, ",")
	if _, err := strconv.ParseFloat(credit, 64); err != nil || !ok || relay != "ON" {
		t.Fatalf("Data = %q, want \"<kWh>,ON\"", r.Result.Data)
	}

	tasks := s.Tasks()
	if len(tasks) != 1 {
		t.Fatalf("Tasks = %+v", tasks)
	}
	if tk := tasks[0]; tk.ID != id || tk.Kind != KindReading || tk.Meter != "m-1" || tk.Command != "Current Credit Register" ||
		tk.Status != StatusSuccess || tk.Polls != 3 || !tk.Created.Equal(t0) {
		t.Fatalf("task = %+v", tk)
	}
	if n := len(s.MeterTasks("m-1", "Current Credit Register")); n != 1 {
		t.Fatalf("MeterTasks = %d", n)
	}
	if n := len(s.MeterTasks("m-2", "")); n != 0 {
		t.Fatalf("MeterTasks(m-2) = %d", n)
	}
	calls := s.Calls()
	if len(calls) != 4 || calls[0].Path != "/COMM_RemoteReading" || calls[0].Code != "00" || calls[0].Meter != "m-1" ||
		len(calls[0].TaskIDs) != 1 || calls[0].TaskIDs[0] != id || calls[3].Status != http.StatusOK {
		t.Fatalf("Calls = %+v", calls)
	}
}

func TestV1CommandsAndData(t *testing.T) {
	_, _, url := start(t, Config{API: V1})
	cases := []struct {
		path   string
		fields map[string]any
		poll   string
		data   string
	}{
		{"/COMM_RemoteReading", map[string]any{"MeterNo": "m-1", "DataItem": "VoltageB"}, "/COMM_RemoteReadingTask", "230.1 V"},
		{"/COMM_RemoteReading", map[string]any{"MeterNo": "m-1", "DataItem": "Date"}, "/COMM_RemoteReadingTask", "26-08-05 03"},
		{"/COMM_RemoteControl", map[string]any{"MeterNo": "m-1", "DataItem": "Switch Off"}, "/COMM_RemoteControlTask", ""},
		{"/COMM_RemoteReading", map[string]any{"MeterNo": "m-1", "DataItem": "Current Credit Register"}, "/COMM_RemoteReadingTask", "108.8,OFF"},
		{"/COMM_RemoteWrite", map[string]any{"MeterNo": "m-1", "DataItem": "Date", "Data": "26080503"}, "/COMM_RemoteWriteTask", ""},
		{"/COMM_RemoteToken", map[string]any{"MeterNo": "m-1", "Token": "1234 5678 9012 3456 7890"}, "/COMM_RemoteTokenTask", ""},
	}
	for _, c := range cases {
		id := v1Create(t, url, c.path, c.fields)
		r, a := v1Call(t, url, c.poll, map[string]any{"TaskNo": id})
		want := c.fields["DataItem"]
		if want == nil {
			want = "Token"
		}
		if status(r) != "True" || r.Result.DataItem != want || r.Result.Data != c.data {
			t.Errorf("%s %v: %s, want True, DataItem %v, Data %q", c.path, c.fields, a.body, want, c.data)
		}
	}
}

func TestV1Failure(t *testing.T) {
	_, _, url := start(t, Config{API: V1, FailRate: 1})
	id := v1Create(t, url, "/COMM_RemoteControl", map[string]any{"MeterNo": "m-1", "DataItem": "Switch On"})
	r, a := v1Call(t, url, "/COMM_RemoteControlTask", map[string]any{"TaskNo": id})
	if r.ResultCode != "00" || r.Reason != "OK" || status(r) != "False" || r.Result.Data != "" {
		t.Fatalf("failed task: %s, want 00/OK with Status False", a.body)
	}
}

func TestV1TokenRejected(t *testing.T) {
	_, _, url := start(t, Config{API: V1, TokenRejectRate: 1})
	tok := map[string]any{"MeterNo": "m-1", "Token": "tok-1"}
	id := v1Create(t, url, "/COMM_RemoteToken", tok)
	r, a := v1Call(t, url, "/COMM_RemoteTokenTask", map[string]any{"TaskNo": id})
	if r.ResultCode != "99" || r.Result != nil {
		t.Fatalf("rejected token: %s, want ResultCode 99 and no Result", a.body)
	}
	if _, ok := a.fields(t)["Result"]; ok {
		t.Fatalf("rejected token: %s has a Result", a.body)
	}
	// The rate applies to token tasks only.
	rid := v1Create(t, url, "/COMM_RemoteReading", map[string]any{"MeterNo": "m-1", "DataItem": "Power"})
	if r, a := v1Call(t, url, "/COMM_RemoteReadingTask", map[string]any{"TaskNo": rid}); status(r) != "True" {
		t.Fatalf("reading under a token-reject rate of 1: %s", a.body)
	}
}

func TestV1TokenRejectedAtCreate(t *testing.T) {
	s, _, url := start(t, Config{API: V1, TokenRejectRate: 1, TokenRejectAtCreate: true})
	r, a := v1Call(t, url, "/COMM_RemoteToken", map[string]any{"MeterNo": "m-1", "Token": "tok-1"})
	if r.ResultCode != "99" || r.Reason != "other error" || r.Result != nil {
		t.Fatalf("create: %s, want 99 / other error, no Result", a.body)
	}
	if n := len(s.Tasks()); n != 0 {
		t.Fatalf("%d tasks, want none", n)
	}
}

func TestReusedTokenRejected(t *testing.T) {
	for _, accept := range []bool{false, true} {
		_, _, url := start(t, Config{API: V1, AcceptReusedTokens: accept})
		var got []string
		for _, meter := range []string{"m-1", "m-1", "m-2"} {
			id := v1Create(t, url, "/COMM_RemoteToken", map[string]any{"MeterNo": meter, "Token": "tok-1"})
			r, _ := v1Call(t, url, "/COMM_RemoteTokenTask", map[string]any{"TaskNo": id})
			got = append(got, r.ResultCode)
		}
		want := "00 99 00"
		if accept {
			want = "00 00 00"
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("AcceptReusedTokens %v: %s, want %s", accept, g, want)
		}
	}
}

func TestV1WrongCredentials(t *testing.T) {
	s, _, url := start(t, Config{API: V1, Company: "NXT", User: "ops", Password: "pw"})
	for _, creds := range []map[string]any{
		{"CompanyName": "NXT", "UserName": "ops", "Password": "nope"},
		{"CompanyName": "Other", "UserName": "ops", "Password": "pw"},
		{"CompanyName": "NXT", "UserName": "admin", "Password": "pw"},
		{"MeterNo": "m-1"},
	} {
		body := map[string]any{"MeterNo": "m-1", "DataItem": "Power"}
		maps.Copy(body, creds)
		a := post(t, url, "/COMM_RemoteReading", body, "")
		var r v1Resp
		_ = json.Unmarshal(a.body, &r)
		if a.status != 200 || r.ResultCode != V1ResultAuthFailed || r.Result != nil {
			t.Errorf("%v: %d %s, want %s and no Result", creds, a.status, a.body, V1ResultAuthFailed)
		}
	}
	if n := len(s.Tasks()); n != 0 {
		t.Fatalf("%d tasks created with wrong credentials", n)
	}
	ok := post(t, url, "/COMM_RemoteReading", map[string]any{"CompanyName": "NXT", "UserName": "ops", "Password": "pw", "MeterNo": "m-1", "DataItem": "Power"}, "")
	if !bytes.Contains(ok.body, []byte(`"ResultCode":"00"`)) {
		t.Fatalf("right credentials: %s", ok.body)
	}
	var r v1Resp
	_ = json.Unmarshal(ok.body, &r)
	poll := post(t, url, "/COMM_RemoteReadingTask", map[string]any{"CompanyName": "NXT", "UserName": "ops", "Password": "x", "TaskNo": r.Result.TaskNo}, "")
	if !bytes.Contains(poll.body, []byte(`"ResultCode":"01"`)) {
		t.Fatalf("poll with a wrong password: %s", poll.body)
	}
}

func TestV1UnknownMeterAndTask(t *testing.T) {
	s, _, url := start(t, Config{API: V1, Meters: []string{"m-1"}})
	r, a := v1Call(t, url, "/COMM_RemoteReading", map[string]any{"MeterNo": "m-9", "DataItem": "Power"})
	if r.ResultCode != V1ResultMeterUnknown || r.Result != nil {
		t.Fatalf("unknown meter: %s", a.body)
	}
	id := v1Create(t, url, "/COMM_RemoteReading", map[string]any{"MeterNo": "m-1", "DataItem": "Power"})
	for _, c := range []struct{ path, id string }{
		{"/COMM_RemoteReadingTask", "no-such-task"},
		{"/COMM_RemoteControlTask", id}, // a reading task is not a control task
	} {
		r, a := v1Call(t, url, c.path, map[string]any{"TaskNo": c.id})
		if r.ResultCode != V1ResultTaskUnknown || r.Result != nil {
			t.Errorf("%s %s: %s, want %s and no Result", c.path, c.id, a.body, V1ResultTaskUnknown)
		}
	}
	if r, a := v1Call(t, url, "/COMM_RemoteReadingTask", map[string]any{}); r.ResultCode != V1ResultBadRequest {
		t.Errorf("poll without TaskNo: %s", a.body)
	}
	if r, a := v1Call(t, url, "/COMM_RemoteToken", map[string]any{"MeterNo": "m-1"}); r.ResultCode != V1ResultBadRequest {
		t.Errorf("token without Token: %s", a.body)
	}
	if n := len(s.Tasks()); n != 1 {
		t.Fatalf("%d tasks, want 1", n)
	}
}

// TestLostTasksDoNotExist: a task the API lost (Forget, POST
// /_sim/forget, LoseRate) answers its polls as an unknown task does, on
// V1 and V2; forgetting a task never created is a 404.
func TestLostTasksDoNotExist(t *testing.T) {
	s, _, url := start(t, Config{API: V1})
	id := v1Create(t, url, "/COMM_RemoteReading", map[string]any{"MeterNo": "m-1", "DataItem": "Power"})
	resp, err := http.Post(url+"/_sim/forget?task="+id, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /_sim/forget: %d", resp.StatusCode)
	}
	r, a := v1Call(t, url, "/COMM_RemoteReadingTask", map[string]any{"TaskNo": id})
	if r.ResultCode != V1ResultTaskUnknown || r.Result != nil || r.Reason != "task "+id+" does not exist" {
		t.Fatalf("poll of a lost task: %s, want %s and no Result", a.body, V1ResultTaskUnknown)
	}
	if tasks := s.Tasks(); len(tasks) != 1 || !tasks[0].Lost || tasks[0].Polls != 0 {
		t.Fatalf("tasks %+v, want the one task, lost, never polled", tasks)
	}
	if resp, err = http.Post(url+"/_sim/forget?task=4242", "", nil); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("POST /_sim/forget of a task never created: %d, want 404", resp.StatusCode)
	}

	s, _, url = start(t, Config{API: V2, LoseRate: 1})
	token := login(t, url, nil)
	id = v2Create(t, url, token, rmt+"CreateReadingTask", v2Item("m-1", 39, ""))[0]
	a = post(t, url, rmt+"GetReadingTask", map[string]any{"id": id, "lang": "en", "company": "Acme"}, token)
	if !bytes.Contains(a.body, []byte(`"code":`+strconv.Itoa(V2CodeTaskUnknown))) || !bytes.Contains(a.body, []byte("does not exist")) {
		t.Fatalf("V2 poll of a task lost at once (LoseRate 1): %s", a.body)
	}
	if tasks := s.Tasks(); len(tasks) != 1 || !tasks[0].Lost {
		t.Fatalf("tasks %+v, want one, lost", tasks)
	}
}

func TestV1HTTPErrors(t *testing.T) {
	_, _, url := start(t, Config{API: V1})
	check := func(name string, a answer, want int) {
		t.Helper()
		var m v1Message
		if a.status != want || json.Unmarshal(a.body, &m) != nil || m.Message == "" {
			t.Errorf("%s: %d %s, want %d with a Message", name, a.status, a.body, want)
		}
	}
	resp, err := http.Post(url+"/COMM_RemoteReading", "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	check("malformed JSON", answer{status: resp.StatusCode, body: b}, http.StatusBadRequest)

	resp, err = http.Get(url + "/COMM_RemoteReading")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	check("GET", answer{status: resp.StatusCode, body: b}, http.StatusMethodNotAllowed)

	check("unknown path", post(t, url, "/COMM_Nothing", v1Body(nil), ""), http.StatusNotFound)
	// Paths match without regard to case.
	if a := post(t, url, "/comm_remotereading", v1Body(map[string]any{"MeterNo": "m", "DataItem": "Power"}), ""); a.status != 200 {
		t.Errorf("lower-case path: %d", a.status)
	}
}

// ---- V2 ----

// login logs in with the client's body and returns the token.
func login(t *testing.T, url string, body map[string]any) string {
	t.Helper()
	if body == nil {
		body = map[string]any{"userId": "admin", "password": "secret", "company": "Acme"}
	}
	a := post(t, url, "/API/User/Login", body, "")
	var r struct {
		Code   int
		Reason string
		Result *struct{ Token string }
	}
	if err := json.Unmarshal(a.body, &r); err != nil || a.status != 200 || r.Code != 0 || r.Reason != "success" || r.Result == nil || r.Result.Token == "" {
		t.Fatalf("login: %d %s", a.status, a.body)
	}
	return r.Result.Token
}

// jwtExp reads the exp claim the way the client does (readJwtExpMs).
func jwtExp(t *testing.T, jwt string) int64 {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWT", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Exp *float64 }
	if err := json.Unmarshal(b, &claims); err != nil || claims.Exp == nil {
		t.Fatalf("claims %s: no exp", b)
	}
	return int64(*claims.Exp)
}

// v2Item is one create element as the client builds it (_createTask).
func v2Item(meter string, protocolID int, data string) []map[string]any {
	it := map[string]any{"meterId": meter, "protocolId": protocolID, "customerId": "cust-1", "company": "Acme"}
	if data != "" {
		it["data"] = data
	}
	return []map[string]any{it}
}

// v2Create creates tasks and returns their ids.
func v2Create(t *testing.T, url, token, path string, body any) []string {
	t.Helper()
	a := post(t, url, path, body, token)
	var r struct {
		Code   int
		Reason string
		Result []struct{ ID string }
	}
	if err := json.Unmarshal(a.body, &r); err != nil || a.status != 200 || r.Code != 0 || r.Reason != "success" || len(r.Result) == 0 {
		t.Fatalf("%s: %d %s", path, a.status, a.body)
	}
	var ids []string
	for _, x := range r.Result {
		if _, err := strconv.Atoi(x.ID); err != nil {
			t.Fatalf("id %q: the client polls with Number(id)", x.ID)
		}
		ids = append(ids, x.ID)
	}
	return ids
}

// v2Row is a task in a get answer.
type v2Row struct {
	Name   string
	Status int
	Data   any
}

// v2GetTask polls id the way the client does ({id: Number(id), lang, company}).
func v2GetTask(t *testing.T, url, token, path, id string) (int, string, v2Row, answer) {
	t.Helper()
	n, _ := strconv.Atoi(id)
	a := post(t, url, path, map[string]any{"id": n, "lang": "en", "company": "Acme"}, token)
	if a.status != 200 {
		return 0, "", v2Row{}, a
	}
	var r struct {
		Code   int
		Reason string
		Result *struct{ Data []v2Row }
	}
	if err := json.Unmarshal(a.body, &r); err != nil {
		t.Fatalf("%s: %v in %s", path, err, a.body)
	}
	var row v2Row
	if r.Result != nil && len(r.Result.Data) == 1 {
		row = r.Result.Data[0]
	} else {
		row.Status = -1
	}
	return r.Code, r.Reason, row, a
}

const rmt = "/API/RemoteMeterTask/"

func TestV2LoginAndTransitions(t *testing.T) {
	s, clk, url := start(t, Config{API: V2, Latency: 5 * time.Second, TokenTTL: 30 * time.Minute, CustomerID: "cust-1"})
	token := login(t, url, nil)
	if exp := jwtExp(t, token); exp != t0.Add(30*time.Minute).Unix() {
		t.Fatalf("exp = %d, want login time + TokenTTL = %d", exp, t0.Add(30*time.Minute).Unix())
	}
	ids := v2Create(t, url, token, rmt+"CreateReadingTask", v2Item("m-1", V2ProtocolReadCredit, ""))
	code, reason, row, a := v2GetTask(t, url, token, rmt+"GetReadingTask", ids[0])
	if code != 0 || reason != "success" || row.Status != V2StatusProcessing || row.Name != "Current Credit Balance" {
		t.Fatalf("before the latency: %s, want status 0", a.body)
	}
	clk.Advance(5 * time.Second)
	code, _, row, a = v2GetTask(t, url, token, rmt+"GetReadingTask", ids[0])
	if code != 0 || row.Status != V2StatusSuccess || row.Name != "Current Credit Balance" || row.Data != "108.8" {
		t.Fatalf("after the latency: %s, want status 1 with the credit", a.body)
	}
	tk, ok := s.Task(ids[0])
	if !ok || tk.Kind != KindReading || tk.Meter != "m-1" || tk.ProtocolID != 39 || tk.Command != "39" || tk.Polls != 2 {
		t.Fatalf("task = %+v", tk)
	}

	// The create body is an array: one task per element, ids in order.
	body := append(v2Item("m-1", V2ProtocolTurnOff, ""), v2Item("m-2", V2ProtocolTurnOn, "")...)
	ids = v2Create(t, url, token, rmt+"CreateControlTask", body)
	clk.Advance(5 * time.Second)
	for i, want := range []string{"Disconnected", "Connected"} {
		if _, _, row, a := v2GetTask(t, url, token, rmt+"GetControlTask", ids[i]); row.Status != 1 || row.Name != "Relay On/Off" || row.Data != want {
			t.Errorf("control %d: %s, want Relay On/Off %s", i, a.body, want)
		}
	}
	if m := s.MeterTasks("m-2", "20000"); len(m) != 1 || m[0].ID != ids[1] {
		t.Errorf("MeterTasks(m-2, 20000) = %+v", m)
	}
}

func TestV2FailedAndTokenRejected(t *testing.T) {
	_, _, url := start(t, Config{API: V2, FailRate: 1})
	token := login(t, url, nil)
	id := v2Create(t, url, token, rmt+"CreateSettingTask", v2Item("m-1", V2ProtocolSetDate, "2026-08-05 00:00:00"))[0]
	if code, reason, row, a := v2GetTask(t, url, token, rmt+"GetSettingTask", id); code != 0 || reason != "success" || row.Status != V2StatusFailed {
		t.Fatalf("failed: %s, want status 2", a.body)
	}

	_, _, url = start(t, Config{API: V2, TokenRejectRate: 1})
	token = login(t, url, nil)
	id = v2Create(t, url, token, rmt+"CreateTokenTask", v2Item("m-1", V2ProtocolToken, "tok-1"))[0]
	if code, _, row, a := v2GetTask(t, url, token, rmt+"GetTokenTask", id); code != 0 || row.Status != V2StatusTokenRejected || row.Name != "Token" {
		t.Fatalf("rejected: %s, want status 3 named Token", a.body)
	}
	if _, _, row, a := v2GetTask(t, url, token, rmt+"GetReadingTask", id); row.Status != -1 {
		t.Fatalf("a token task polled as a reading: %s, want no row", a.body)
	}
}

func TestV2ExpiredTokenAnd401(t *testing.T) {
	s, clk, url := start(t, Config{API: V2, TokenTTL: time.Minute})
	token := login(t, url, nil)
	id := v2Create(t, url, token, rmt+"CreateReadingTask", v2Item("m-1", V2ProtocolReadVoltage, ""))[0]

	clk.Advance(time.Minute)
	for _, path := range []string{rmt + "CreateReadingTask", rmt + "GetReadingTask"} {
		a := post(t, url, path, v2Item("m-1", 5, ""), token)
		if a.status != http.StatusUnauthorized || !strings.Contains(a.header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%s with an expired token: %d %v", path, a.status, a.header)
		}
	}
	for _, bearer := range []string{"", "not-a-token"} {
		if a := post(t, url, rmt+"GetReadingTask", map[string]any{"id": 1}, bearer); a.status != http.StatusUnauthorized {
			t.Fatalf("bearer %q: %d", bearer, a.status)
		}
	}
	if n := len(s.Tasks()); n != 1 {
		t.Fatalf("%d tasks, want 1 (none created with an expired token)", n)
	}

	fresh := login(t, url, nil)
	if fresh == token {
		t.Fatal("re-login returned the expired token")
	}
	if code, _, row, a := v2GetTask(t, url, fresh, rmt+"GetReadingTask", id); code != 0 || row.Status != 1 || row.Data != "230.1" {
		t.Fatalf("after re-login: %s", a.body)
	}

	s.ExpireTokens()
	if a := post(t, url, rmt+"GetReadingTask", map[string]any{"id": id, "company": "Acme"}, fresh); a.status != http.StatusUnauthorized {
		t.Fatalf("after ExpireTokens: %d", a.status)
	}
}

func TestV2WrongCredentials(t *testing.T) {
	s, _, url := start(t, Config{API: V2})
	for _, body := range []map[string]any{
		{"userId": "admin", "password": "nope", "company": "Acme"},
		{"userId": "root", "password": "secret", "company": "Acme"},
		{"userId": "admin", "password": "secret", "company": "Other"},
	} {
		a := post(t, url, "/API/User/Login", body, "")
		var r struct {
			Code   int
			Result json.RawMessage
		}
		if err := json.Unmarshal(a.body, &r); err != nil || a.status != 200 || r.Code != V2CodeAuthFailed || string(r.Result) != "null" {
			t.Errorf("%v: %d %s, want code %d and result null", body, a.status, a.body, V2CodeAuthFailed)
		}
	}
	for _, c := range s.Calls() {
		if c.Code != strconv.Itoa(V2CodeAuthFailed) {
			t.Errorf("call %+v", c)
		}
	}
}

func TestV2UnknownMeterTaskAndBadBodies(t *testing.T) {
	s, _, url := start(t, Config{API: V2, Meters: []string{"m-1"}, CustomerID: "cust-1"})
	token := login(t, url, nil)
	expectCode := func(name, path string, body any, want int) {
		t.Helper()
		a := post(t, url, path, body, token)
		var r struct {
			Code   int
			Result json.RawMessage
		}
		if err := json.Unmarshal(a.body, &r); err != nil || a.status != 200 || r.Code != want || string(r.Result) != "null" {
			t.Errorf("%s: %d %s, want code %d and result null", name, a.status, a.body, want)
		}
	}
	expectCode("unknown meter", rmt+"CreateReadingTask", v2Item("m-9", 39, ""), V2CodeMeterUnknown)
	expectCode("unknown task", rmt+"GetReadingTask", map[string]any{"id": 424242, "lang": "en", "company": "Acme"}, V2CodeTaskUnknown)
	expectCode("empty array", rmt+"CreateReadingTask", []any{}, V2CodeBadRequest)
	expectCode("no token data", rmt+"CreateTokenTask", v2Item("m-1", 30000, ""), V2CodeBadRequest)
	other := v2Item("m-1", 39, "")
	other[0]["customerId"] = "cust-2"
	expectCode("other customer", rmt+"CreateReadingTask", other, V2CodeBadRequest)
	if n := len(s.Tasks()); n != 0 {
		t.Fatalf("%d tasks, want none", n)
	}
	// A create body that is not an array is not the JSON the endpoint takes.
	if a := post(t, url, rmt+"CreateReadingTask", v2Item("m-1", 39, "")[0], token); a.status != http.StatusBadRequest {
		t.Errorf("object body: %d %s", a.status, a.body)
	}
	// The id may come as a string too.
	id := v2Create(t, url, token, rmt+"CreateReadingTask", v2Item("m-1", 45, ""))[0]
	a := post(t, url, rmt+"GetReadingTask", map[string]any{"id": id, "lang": "en", "company": "Acme"}, token)
	if !bytes.Contains(a.body, []byte(`"name":"Meter Firmware Version","status":1`)) {
		t.Errorf("string id: %s", a.body)
	}
}

// ---- both ----

// TestSlowPollAnswersLate: with SlowPoll a poll is answered that much
// later, on V1 and V2.
func TestSlowPollAnswersLate(t *testing.T) {
	const slow = 50 * time.Millisecond
	_, _, url := start(t, Config{API: V1, SlowPoll: slow})
	id := v1Create(t, url, "/COMM_RemoteReading", map[string]any{"MeterNo": "m-1", "DataItem": "Power"})
	began := time.Now()
	if r, a := v1Call(t, url, "/COMM_RemoteReadingTask", map[string]any{"TaskNo": id}); r.ResultCode != "00" || time.Since(began) < slow {
		t.Fatalf("V1 poll: %s after %v, want an answer after %v", a.body, time.Since(began), slow)
	}
	_, _, url = start(t, Config{API: V2, SlowPoll: slow})
	token := login(t, url, nil)
	id = v2Create(t, url, token, rmt+"CreateReadingTask", v2Item("m-1", 39, ""))[0]
	began = time.Now()
	if a := post(t, url, rmt+"GetReadingTask", map[string]any{"id": id, "lang": "en", "company": "Acme"}, token); a.status != 200 || time.Since(began) < slow {
		t.Fatalf("V2 poll: %d after %v, want an answer after %v", a.status, time.Since(began), slow)
	}
}

func TestSlowCreateAnswersLateButTaskExistsAtOnce(t *testing.T) {
	const slow = 300 * time.Millisecond
	for _, api := range []API{V1, V2} {
		t.Run(string(api), func(t *testing.T) {
			created := make(chan Task, 1)
			s, _, url := start(t, Config{API: api, SlowCreate: slow, Latency: time.Hour, Clock: clock.System(),
				OnCreate: func(tk Task) { created <- tk }})
			var token string
			path, body, pollPath := "/COMM_RemoteReading", any(v1Body(map[string]any{"MeterNo": "m-1", "DataItem": "Power"})), "/COMM_RemoteReadingTask"
			if api == V2 {
				token = login(t, url, nil)
				path, body, pollPath = rmt+"CreateReadingTask", v2Item("m-1", 11, ""), rmt+"GetReadingTask"
			}
			began := time.Now()
			done := make(chan answer, 1)
			go func() {
				b, _ := json.Marshal(body)
				req, _ := http.NewRequest(http.MethodPost, url+path, bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- answer{}
					return
				}
				rb, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				done <- answer{status: resp.StatusCode, body: rb}
			}()

			tk := <-created
			// The task exists and can be polled while its create is unanswered.
			if got := s.Tasks(); len(got) != 1 || got[0].ID != tk.ID || got[0].Status != StatusPending {
				t.Fatalf("Tasks during the create = %+v", got)
			}
			var pollBody any = v1Body(map[string]any{"TaskNo": tk.ID})
			if api == V2 {
				n, _ := strconv.Atoi(tk.ID)
				pollBody = map[string]any{"id": n, "lang": "en", "company": "Acme"}
			}
			pending := `"TaskNo":"` + tk.ID + `","Status":null`
			if api == V2 {
				pending = `"status":0`
			}
			if a := post(t, url, pollPath, pollBody, token); a.status != 200 || !bytes.Contains(a.body, []byte(pending)) {
				t.Fatalf("poll during the create: %d %s, want %s", a.status, a.body, pending)
			}
			select {
			case a := <-done:
				t.Fatalf("create answered before SlowCreate: %s after %v", a.body, time.Since(began))
			default:
			}

			a := <-done
			if el := time.Since(began); el < slow {
				t.Fatalf("create answered after %v, want ≥ %v", el, slow)
			}
			if a.status != 200 || !bytes.Contains(a.body, []byte(fmt.Sprintf("%q", tk.ID))) {
				t.Fatalf("create answer %d %s does not name task %s", a.status, a.body, tk.ID)
			}
			if n := len(s.Tasks()); n != 1 {
				t.Fatalf("%d tasks, want 1", n)
			}
		})
	}
}

func TestSeedDeterminesOutcomes(t *testing.T) {
	outcomes := func(seed int64) string {
		s, _, url := start(t, Config{API: V1, FailRate: 0.3, TokenRejectRate: 0.3, Seed: seed, AcceptReusedTokens: true})
		for i := range 200 {
			v1Create(t, url, "/COMM_RemoteToken", map[string]any{"MeterNo": "m-1", "Token": fmt.Sprint(i)})
		}
		var b strings.Builder
		counts := map[Status]int{}
		for _, tk := range s.Tasks() {
			b.WriteString(string(tk.Outcome[0]))
			counts[tk.Outcome]++
		}
		// 30 % rejected, then 30 % of the rest failed: 60, 42, 98 of 200.
		if r, f := counts[StatusTokenRejected], counts[StatusFailed]; r < 35 || r > 85 || f < 20 || f > 65 {
			t.Errorf("seed %d: %v", seed, counts)
		}
		return b.String()
	}
	if a, b := outcomes(7), outcomes(7); a != b {
		t.Fatalf("same seed, different outcomes:\n%s\n%s", a, b)
	}
	if a, b := outcomes(7), outcomes(8); a == b {
		t.Fatalf("seeds 7 and 8 drew the same 200 outcomes")
	}
}

func TestSimEndpointsAndValidate(t *testing.T) {
	s, _, url := start(t, Config{API: V1})
	v1Create(t, url, "/COMM_RemoteReading", map[string]any{"MeterNo": "m-1", "DataItem": "Power"})
	resp, err := http.Get(url + "/_sim/tasks")
	if err != nil {
		t.Fatal(err)
	}
	var tasks []Task
	err = json.NewDecoder(resp.Body).Decode(&tasks)
	resp.Body.Close()
	if err != nil || len(tasks) != 1 || tasks[0].Meter != "m-1" {
		t.Fatalf("/_sim/tasks: %v %+v", err, tasks)
	}
	resp, err = http.Post(url+"/_sim/expire-tokens", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /_sim/expire-tokens: %d", resp.StatusCode)
	}
	if n := len(s.Calls()); n != 1 {
		t.Fatalf("%d calls recorded, want 1 (the /_sim/ requests are not vendor calls)", n)
	}
	for _, c := range []Config{{API: "v3"}, {FailRate: 1.5}, {TokenRejectRate: -1}, {LoseRate: 2}, {Latency: -1}, {SlowCreate: -1}, {SlowPoll: -1}, {TokenTTL: -1}} {
		if c.Validate() == nil {
			t.Errorf("Validate(%+v) = nil", c)
		}
	}
	if err := (Config{API: V2, FailRate: 1, TokenRejectRate: 0}).Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
