package skills

import (
	"errors"
	"fmt"
	"sort"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/protocol"
)

// Set is the skills one principal's sessions see: its own, which they
// save and delete, and the team's, which the host published and which
// they only read. An own skill of a team skill's name hides the team's
// for that principal alone.
type Set struct{ own, team *Store }

// SetOf is the set of principal p in the state directory of root.
func SetOf(root *Store, p principal.Principal) *Set {
	return &Set{own: root.Of(p), team: root.Team()}
}

// teamError is the error of changing a team skill from a session.
type teamError struct{ Name string }

func (e *teamError) Error() string {
	return fmt.Sprintf("skill %q is the team's, published on the host: sessions can use it but not change it "+
		"(save one of another name, or of this name to use your own instead; the host removes it with "+
		"`codebridge skills rm --team %s`)", e.Name, e.Name)
}

// Save stores an own skill.
func (s *Set) Save(name, source, description string) (Skill, error) {
	return s.own.Save(name, source, description)
}

// Delete removes an own skill; a team skill is refused with an error
// that says how the host removes it.
func (s *Set) Delete(name string) (Skill, error) {
	if _, err := s.own.Get(name); err != nil {
		if _, terr := s.team.Get(name); terr == nil {
			return Skill{}, &teamError{Name: name}
		}
	}
	return s.own.Delete(name)
}

// List is every skill the principal sees, by name: its own, and the
// team's it does not hide (marked Team).
func (s *Set) List() ([]Skill, error) {
	own, oerr := s.own.List()
	team, terr := s.team.List()
	mine := make(map[string]bool, len(own))
	for _, sk := range own {
		mine[sk.Name] = true
	}
	out := own
	for _, sk := range team {
		if !mine[sk.Name] {
			sk.Team = true
			out = append(out, sk)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(oerr, terr)
}

// Files are the skills the principal sees, as files for a new sandbox.
func (s *Set) Files() ([]protocol.File, error) {
	list, err := s.List()
	return files(list), err
}
