package skills

import (
	"errors"
	"strings"
	"testing"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/statedir"
)

func TestSetTeamSkillsAreReadOnly(t *testing.T) {
	root := Open(statedir.Dir(t.TempDir()))
	if _, err := root.Team().Save("shared", "def shared():\n    return 'team'\n", "The team's."); err != nil {
		t.Fatal(err)
	}
	alice, bob := SetOf(root, principal.Token("alice")), SetOf(root, principal.Token("bob"))
	list, err := alice.List()
	if err != nil || len(list) != 1 || !list[0].Team || !list[0].Info().Team {
		t.Fatalf("alice's list: %+v %v", list, err)
	}
	var te *teamError
	if _, err := bob.Delete("shared"); !errors.As(err, &te) {
		t.Fatalf("bob deleted the team's skill: %v", err)
	}
	if _, err := bob.Save("shared", "def shared():\n    return 'bob'\n", ""); err != nil {
		t.Fatal(err)
	}
	files, _ := bob.Files()
	if len(files) != 1 || !strings.Contains(string(files[0].Data), "'bob'") {
		t.Fatalf("bob's own skill should hide the team's for him: %v", files)
	}
	files, _ = alice.Files()
	if len(files) != 1 || !strings.Contains(string(files[0].Data), "'team'") {
		t.Fatalf("bob's skill reached alice: %v", files)
	}
	if sk, err := root.Team().Get("shared"); err != nil || !strings.Contains(sk.Source, "'team'") {
		t.Fatalf("the team's skill changed: %+v %v", sk, err)
	}
	if _, err := bob.Delete("shared"); err != nil {
		t.Fatalf("bob's own skill: %v", err)
	}
}
