package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/protocol"
	"github.com/codebridge/codebridge/internal/skills"
	"github.com/codebridge/codebridge/internal/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errNoSkills answers skill requests of a bridge made without a store.
var errNoSkills = errors.New("skills are not kept by this bridge (no state directory): set --state-dir")

// skillFiles are the saved skills, for a new sandbox. A skill that cannot
// be read is logged and left out.
func (h *sandboxHost) skillFiles() []protocol.File {
	if h.skills == nil {
		return nil
	}
	files, err := h.skills.Files()
	if err != nil {
		h.log.Warn("some skills could not be read and were left out of the sandbox", "err", err)
	}
	return files
}

func saveSkill(_ context.Context, h *call, p protocol.SaveSkillParams) (json.RawMessage, error) {
	if h.skills == nil {
		return nil, errNoSkills
	}
	sk, err := h.skills.Save(p.Name, p.Source, p.Description)
	if err != nil {
		return nil, err
	}
	h.log.Info("skill saved", "skill", sk.Name, "bytes", len(sk.Source))
	return json.Marshal(sk.Info())
}

func listSkills(_ context.Context, h *call, _ protocol.ListSkillsParams) (json.RawMessage, error) {
	if h.skills == nil {
		return nil, errNoSkills
	}
	list, err := h.skills.List()
	out := make([]protocol.SkillInfo, 0, len(list))
	for _, sk := range list {
		out = append(out, sk.Info())
	}
	if err != nil {
		h.log.Warn("listing skills", "err", err)
	}
	return json.Marshal(out)
}

func deleteSkill(_ context.Context, h *call, p protocol.DeleteSkillParams) (json.RawMessage, error) {
	if h.skills == nil {
		return nil, errNoSkills
	}
	sk, err := h.skills.Delete(p.Name)
	if err != nil {
		return nil, err
	}
	h.log.Info("skill deleted", "skill", sk.Name)
	return json.Marshal(sk.Info())
}

// withSkills adds the saved skills to a search catalogue, as tools named
// after them; the returned set tells them apart from upstream tools, so
// that they are ranked the same way and marked as skills.
func (h *sandboxHost) withSkills(entries []upstream.Entry) ([]upstream.Entry, map[*mcp.Tool]bool) {
	if h.skills == nil {
		return entries, nil
	}
	list, err := h.skills.List()
	if err != nil {
		h.log.Warn("some skills could not be read for the search", "err", err)
	}
	marked := make(map[*mcp.Tool]bool, len(list))
	for _, sk := range list {
		t := &mcp.Tool{Name: sk.Name, Title: strings.ReplaceAll(sk.Name, "_", " "), Description: sk.Description}
		marked[t] = true
		entries = append(entries, upstream.Entry{Tool: t})
	}
	return entries, marked
}

// skillsOf is the skills principal p sees (its own and the team's); nil
// when the bridge keeps none.
func (b *Bridge) skillsOf(p principal.Principal) *skills.Set {
	if b.opts.Skills == nil {
		return nil
	}
	return skills.SetOf(b.opts.Skills, p)
}

// skillNames lists the skills of a set for the manual.
func skillNames(set *skills.Set) string {
	if set == nil {
		return "none saved yet"
	}
	list, _ := set.List()
	var names []string
	for _, sk := range list {
		names = append(names, sk.Name)
	}
	if len(names) == 0 {
		return "none saved yet"
	}
	return strings.Join(names, ", ")
}

// skillStore is the type of the bridge's store, named for Options.
type skillStore = skills.Store
