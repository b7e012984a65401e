package herald

// The reasons of the stage timeouts, in the words of the device-messaging
// lifecycle herald's stages come from, so that alerting rules written for
// that system match herald's too: the last error of a message whose stage
// timed out starts with one of them, and herald's own detail follows in
// parentheses.
const (
	// AcceptTimeoutReason: SENT_TO_NS passed its accept timeout.
	AcceptTimeoutReason = "Timed out waiting for Network Server to accept message"
	// RelayTimeoutReason: DELIVERED_TO_NS (push) passed its carrier
	// timeout, the network no longer holding the message.
	RelayTimeoutReason = "Timed out waiting for relay node to transmit message to device"
	// DeviceTimeoutReason: SENT_TO_DEVICE passed its device timeout.
	DeviceTimeoutReason = "Timed out waiting for device response after transmission"
	// TaskTimeoutReason: a pull carrier's task (DELIVERED_TO_NS) did not
	// end before its carrier timeout or its message's expiry.
	TaskTimeoutReason = "Timed out waiting for remote task completion"
)

// AcceptTimeoutError is the last error of a message whose send did not
// answer before its accept deadline (the call hung, or its node stopped
// during it): the carrier may have taken the message, and a carrier that
// can look for what it took (carrier/chirpstack) does so on the retry.
const AcceptTimeoutError = AcceptTimeoutReason + " (the carrier did not answer within the accept timeout)"

// formerAcceptTimeoutError is AcceptTimeoutError as the versions before
// these words wrote it, still the last error of messages they stored.
const formerAcceptTimeoutError = "carrier did not answer within the accept timeout"

// IsAcceptTimeout reports whether lastError, a message's last error, says
// its send did not answer before its accept deadline (AcceptTimeoutError,
// or its former text).
func IsAcceptTimeout(lastError string) bool {
	return lastError == AcceptTimeoutError || lastError == formerAcceptTimeoutError
}
