package telegram

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/heraldmq/herald/internal/simserve"
)

// ListenAndServe serves s on addr until ctx ends; then it shuts the server
// down and returns nil.
func ListenAndServe(ctx context.Context, addr string, s *Sim) error {
	return simserve.ListenAndServe(ctx, addr, s)
}

// Serve serves s on ln until ctx ends; then it shuts the server down and
// returns nil. It closes ln.
func Serve(ctx context.Context, ln net.Listener, s *Sim) error {
	return simserve.Serve(ctx, ln, s)
}

// ParseChatFlags builds Config.Chats and Config.AnyChat from the values of
// `herald sim telegram`'s flags. chats is a comma-separated list of "any"
// (every integer chat id is a chat) and chats written ID[=@username][:type],
// like 42, -1001234567890=@news:channel or -4001:group. blocked and kicked
// are comma-separated chat ids whose chats answer 403 (added to the chats
// when not listed).
func ParseChatFlags(chats, blocked, kicked string) ([]Chat, bool, error) {
	var (
		out     []Chat
		anyChat bool
		index   = map[int64]int{}
	)
	for _, item := range splitList(chats) {
		if item == "any" {
			anyChat = true
			continue
		}
		ch, err := parseChat(item)
		if err != nil {
			return nil, false, err
		}
		if _, dup := index[ch.ID]; dup {
			return nil, false, fmt.Errorf("--chats: chat %d listed twice", ch.ID)
		}
		index[ch.ID] = len(out)
		out = append(out, ch)
	}
	for _, set := range []struct {
		flag   string
		list   string
		status ChatStatus
	}{{"--blocked", blocked, StatusBlocked}, {"--kicked", kicked, StatusKicked}} {
		for _, item := range splitList(set.list) {
			id, err := strconv.ParseInt(item, 10, 64)
			if err != nil || id == 0 {
				return nil, false, fmt.Errorf("%s %q: want a non-zero integer chat id", set.flag, item)
			}
			k, ok := index[id]
			if !ok {
				k = len(out)
				index[id] = k
				out = append(out, Chat{ID: id})
			}
			if out[k].Status != StatusMember && out[k].Status != set.status {
				return nil, false, fmt.Errorf("%s: chat %d is both blocked and kicked", set.flag, id)
			}
			out[k].Status = set.status
		}
	}
	return out, anyChat, nil
}

// parseChat reads ID[=@username][:type].
func parseChat(item string) (Chat, error) {
	bad := func(why string) (Chat, error) {
		return Chat{}, fmt.Errorf("--chats %q: %s (want ID[=@username][:type], like -1001234567890=@news:channel)", item, why)
	}
	var ch Chat
	rest := item
	if k := strings.LastIndexByte(rest, ':'); k >= 0 {
		ch.Type, rest = rest[k+1:], rest[:k]
		switch ch.Type {
		case ChatPrivate, ChatGroup, ChatSupergroup, ChatChannel:
		default:
			return bad("unknown type " + strconv.Quote(ch.Type))
		}
	}
	idText, name, hasName := strings.Cut(rest, "=")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id == 0 {
		return bad("the id is not a non-zero integer")
	}
	ch.ID = id
	if hasName {
		if !strings.HasPrefix(name, "@") || len(name) < 2 {
			return bad("a username starts with @")
		}
		ch.Username = name[1:]
	}
	return ch, nil
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
