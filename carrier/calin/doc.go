// Package calin holds the calin-v1 and calin-v2 carriers: prepaid smart
// meters reached through the Calin cloud API, version 1 or 2. A message is
// one remote task for one meter: the carrier creates the task, the task id
// becomes the message's external id (DELIVERED_TO_NS), and the engine polls
// the task until it ends (herald.PathPull, profile taskpoll).
//
// The wire format is learnt from the public client code in
// github.com/nxtgrid/nxt-device-messaging (plugins calin-api-v1 and
// calin-api-v2); package sim/calin serves it for tests and the demo.
//
// # Messages
//
// The target is the meter (V1 MeterNo, V2 meterId); the lane should be the
// meter's DCU, which the caller names (the taskpoll profile lets 5 tasks
// per lane run at once). params.command picks the task family:
//
//	calin-v1  reading  data_item ("Current Credit Register", "Voltage", "Power", "Current", "Version", "Date", …)
//	          control  data_item ("Switch On", "Switch Off")
//	          write    data_item ("Date") and data (yymmddww)
//	          token    token (the STS token delivered to the meter)
//	calin-v2  reading  protocol_id (39 credit, 5 voltage, 11 power, 8 current, 46 power limit, 45 version, 29 clock)
//	          control  protocol_id (20000 relay on, 20001 relay off)
//	          setting  protocol_id (10000 clock) and data ("YYYY-MM-DD HH:mm:ss")
//	          token    token (protocol_id 30000 unless given)
//	          every V2 command: customer_id, unless the route has a default
//
// Other params, or params another command takes, are refused. The
// message's text or payload, which herald requires, is not sent.
//
// # Outcomes
//
// V1 polls read Result.Status: null or "unknown" pending, "True" done,
// "False" failed at the meter; ResultCode "99" is a rejected token. V2
// polls read the task's status: 0 processing, 1 done, 2 failed at the
// meter, 3 a rejected token. A task that ended, done or failed at the
// meter, delivers its message: the meter received the command, and the
// execution's outcome is the message's result (ResultExecution, and
// ResultReason for a failure: the vendor's reason), as the reference
// client reports EXECUTION_SUCCESS and EXECUTION_FAILURE. With
// RetryFailedTasks a task failed at the meter is retried with the
// vendor's reason instead (TO_RETRY, a new task). A rejected token on V1
// (no task in the answer), or on V2 when failed tasks are retried, fails
// at once (STS tokens are single-use: delivering it again cannot
// succeed). A poll answered without the task (V1 no Result, V2 a code
// other than 0 or no task row: "task … does not exist") fails at once
// with the vendor's reason, as the reference client does. A poll that
// errs (network, 5xx, an answer that is not the API's) is tried again at
// the next poll. V2 logs in for a bearer
// token, renews it before its JWT expiry, and logs in once more when a call
// answers 401; a second 401 is an error, retried later.
//
// Errors quote at most ErrorTextLen bytes of an answer, read at most
// MaxAnswer bytes of it, and never show the password. Create answers are
// classified as a send's: 4xx (but 408 and 429) permanent, 429 and 503
// with Retry-After "not now", the rest transient.
//
// # One task per message
//
// Creating a task twice sends a command to a meter twice. The carriers
// create at most one task per message, whatever the accept timeout:
//
//   - Before each create call, the send makes "calin:creating:<attempt>"
//     the message's external id, durably, through herald.Resumer's
//     progress; when that fails, it creates nothing.
//   - A create call is bounded by CreateTimeout (2 minutes), not by the
//     accept timeout: the send waits for it (the carriers are
//     herald.SlowCallers), and the engine keeps the message's claim alive
//     meanwhile, so a slow create ends in one task and one delivery, and
//     holds its DCU slot while it runs. Should the send end first (herald
//     stopping), the call goes on; the message's retry, on this node,
//     waits for it and takes the task it created.
//   - A retry that finds the mark of an earlier attempt whose call it
//     cannot account for (herald restarted or was killed during the call,
//     another node made it, the call timed out or lost its connection
//     after the request was sent, a gateway answered 504) fails the
//     message permanently, saying the task is in doubt: the API has no way
//     to look a task up by meter, so herald does not guess. Replaying the
//     message (attempts start again) creates the task afresh.
//   - An answer that says no task was created (a vendor error code, a 4xx,
//     a 500, a 401, an answer that is not the API's) marks the message
//     "calin:not-created:<attempt>", and its retry creates the task.
package calin
