package query

import (
	"reflect"
	"strings"
	"testing"
)

func TestDrivers(t *testing.T) {
	t.Parallel()
	key := func(v ...string) Access { return Access{Kind: AccessKey, Values: v} }
	tests := []struct {
		q    string
		want []Access
	}{
		{`key = 'req-1'`, []Access{key("REQ-1")}},
		{`key == 'A' AND text ~ '%x%'`, []Access{key("A")}},
		{`key ~ 'REQ-%'`, []Access{{Kind: AccessKeyPrefix, Values: []string{"REQ-"}}}},
		{`key ~ 'req-1'`, []Access{key("REQ-1")}},
		{`key ~ 'A\\%%'`, []Access{{Kind: AccessKeyPrefix, Values: []string{"A%"}}}},
		{`key ~ '%REQ'`, nil},
		{`key ~ 'R%Q%'`, nil},
		{`key ~ '%'`, nil},
		{`key IN ('a', 'B', 'A')`, []Access{key("A", "B")}},
		{`@Category = 'Functional'`, []Access{{Kind: AccessProperty, Name: "CATEGORY", Values: []string{"Functional"}}}},
		{`@Main\ Category IN ('a', 'b', 'a')`, []Access{{Kind: AccessProperty, Name: "MAIN CATEGORY", Values: []string{"a", "b"}}}},
		{`ext@Cost = '12'`, []Access{{Kind: AccessExternal, Name: "COST", Values: []string{"12"}}}},
		{`ext@Main\ Owner IN ('a', 'b', 'a')`, []Access{{Kind: AccessExternal, Name: "MAIN OWNER", Values: []string{"a", "b"}}}},
		{`ext@Cost = 12 AND @Cost = 12`, []Access{{Kind: AccessExternal, Name: "COST", Values: []string{"12"}}, {Kind: AccessProperty, Name: "COST", Values: []string{"12"}}}},
		{`ext@Cost ~ '1%'`, nil},
		{`ext@Cost != '1'`, nil},
		{`ext@Cost IS NOT NULL`, nil},
		{`page = 467382`, []Access{{Kind: AccessPage, Values: []string{"467382"}}}},
		{`page IN ('Specs', 467382, 'Specs')`, []Access{{Kind: AccessPage, Values: []string{"Specs", "467382"}}}},
		{`page ~ 467382`, []Access{{Kind: AccessPageCited, Values: []string{"467382"}}}},
		{`page ~ 'Specs\\% v2' AND key = 'A'`, []Access{{Kind: AccessPageCited, Values: []string{"Specs% v2"}}, key("A")}},
		{`page ~ 1 OR page = 'x'`, []Access{{Kind: AccessUnion, Branches: [][]Access{
			{{Kind: AccessPageCited, Values: []string{"1"}}}, {{Kind: AccessPage, Values: []string{"x"}}},
		}}}},
		{`page != 1`, nil},
		{`page NOT IN (1)`, nil},
		{`page > 1`, nil},
		{`jira@Implements = 'JRA-21'`, []Access{{Kind: AccessIssue, Name: "implements", Values: []string{"JRA-21"}}}},
		{`jira IN ('A-1', 'A-2')`, []Access{{Kind: AccessIssue, Values: []string{"A-1", "A-2"}}}},
		{`to = 'demo/req-1'`, []Access{{Kind: AccessTo, Values: []string{"demo/REQ-1"}, Refs: []Ref{{SpaceKey: "demo", Key: "REQ-1"}}}}},
		{`from@refines = 'REQ-1'`, []Access{{Kind: AccessFrom, Name: "refines", Values: []string{"REQ-1"}, Refs: []Ref{{Key: "REQ-1"}}}}},
		{`to IN ('a/b/c', 'X')`, []Access{{Kind: AccessTo, Values: []string{"X"}, Refs: []Ref{{Key: "X"}}}}},
		{`to = 'a/b/c'`, nil},
		{`baseline = 03`, []Access{{Kind: AccessBaseline, Values: []string{"3"}}}},
		{`baseline IN (3.0, '3', 4)`, []Access{{Kind: AccessBaseline, Values: []string{"3", "4"}}}},
		{`baseline = 0`, nil},
		{`baseline = 2.5`, nil},
		{`baseline IS NULL`, nil},
		{`space = 'S' AND status = 'active'`, []Access{{Kind: AccessSpace, Values: []string{"S"}}, {Kind: AccessStatus, Values: []string{"ACTIVE"}}}},
		{`key = 'A' OR key = 'B'`, []Access{{Kind: AccessUnion, Branches: [][]Access{{key("A")}, {key("B")}}}}},
		{`(key = 'A' OR key = 'B') OR (key = 'C' AND page = 1)`, []Access{{Kind: AccessUnion, Branches: [][]Access{
			{key("A")}, {key("B")}, {key("C"), {Kind: AccessPage, Values: []string{"1"}}},
		}}}},
		{`space = 'S' AND (key = 'A' OR @C = 'x')`, []Access{{Kind: AccessSpace, Values: []string{"S"}}, {Kind: AccessUnion, Branches: [][]Access{
			{key("A")}, {{Kind: AccessProperty, Name: "C", Values: []string{"x"}}},
		}}}},
		{`key = 'A' OR text ~ '%x%'`, nil},
		{`NOT key = 'A'`, nil},
		{`NOT NOT key = 'A'`, nil},
		{`key != 'A'`, nil},
		{`key NOT IN ('A')`, nil},
		{`key > 'A'`, []Access{{Kind: AccessKeyRange, From: "A-"}}},
		{`key >= 'req-050000' AND key < 'REQ-050100'`, []Access{{Kind: AccessKeyRange, From: "REQ-050000", Before: "REQ-050100"}}},
		{`key <= 'b' AND @C = 'x' AND key ~ 'A%'`, []Access{{Kind: AccessKeyRange, From: "A", Before: "B"}, {Kind: AccessProperty, Name: "C", Values: []string{"x"}}}},
		{`key ~ 'B%' AND key < 'A'`, []Access{{Kind: AccessKeyRange, From: "B", Before: "A"}}},
		{`key < 'A!' AND key > 'A b'`, []Access{{Kind: AccessKeyRange, From: "A-", Before: "A-"}}},
		{`key < ''`, []Access{{Kind: AccessKeyRange, From: "-", Before: "-"}}},
		{`key > 10`, nil},
		{`key >= '-5'`, nil},
		{`text = 'A'`, nil},
		{`parent = 'A'`, nil},
		{`@C ~ 'x%'`, nil},
		{`'full text'`, nil},
		{`'the full text'`, []Access{{Kind: AccessWord, Values: []string{"FULL"}}}},
		{`text ~ '%Requirement 12%'`, nil},
		{`text ~ '%the login page%'`, []Access{{Kind: AccessWord, Values: []string{"LOGIN"}}}},
		{`text ~ 'login%'`, nil},
		{`text ~ 'login %' AND key ~ 'A%'`, []Access{{Kind: AccessWord, Values: []string{"LOGIN"}}, {Kind: AccessKeyPrefix, Values: []string{"A"}}}},
		{`text ~ '%die Größe überall%'`, []Access{{Kind: AccessWord, Values: []string{strings.ToUpper("Größe")}}}},
		{`text ~ 'a%b c%d'`, nil},
		{`text ~ 'a b%c d e%f'`, []Access{{Kind: AccessWord, Values: []string{"A"}}}},
		{`text ~ '%log%in%'`, nil},
		{`text ~ 'exact'`, []Access{{Kind: AccessWord, Values: []string{"EXACT"}}}},
		{``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := Drivers(e); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Drivers(%q) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestAccessHoldsOnFixture(t *testing.T) {
	t.Parallel()
	tests := []struct {
		q    string
		want []string
	}{
		{`key = 'req-001'`, []string{"REQ-001", "REQ-001@3"}},
		{`key ~ 'req-%'`, []string{"REQ-000", "REQ-001", "REQ-002", "REQ-001@3", "REQ-010"}},
		{`@category = 'Functional'`, []string{"REQ-001", "REQ-002", "REQ-001@3"}},
		{`ext@COST = '12'`, []string{"REQ-001", "REQ-001@3"}},
		{`ext@category = 'External'`, []string{"REQ-002"}},
		{`ext@category = 'Functional'`, nil},
		{`page = 124`, []string{"REQ-002"}},
		{`page = 'LOGIN'`, []string{"REQ-002"}},
		{`page ~ 124`, []string{"REQ-001", "REQ-002", "X-1", "REQ-001@3"}},
		{`page ~ 'specs v2'`, []string{"REQ-000", "REQ-001", "REQ-001@3"}},
		{`jira@implements = 'PROJ-2'`, []string{"REQ-002"}},
		{`to = 'OTHER/X-1'`, []string{"REQ-002"}},
		{`from = 'REQ-002'`, []string{"REQ-001", "X-1"}},
		{`baseline = 3`, []string{"REQ-001@3"}},
		{`space = 'OTHER'`, []string{"X-1"}},
		{`status = 'deleted'`, []string{"X-1"}},
		{`key = 'X-1' OR page = 123 AND @Category = 'Functional'`, []string{"REQ-001", "X-1", "REQ-001@3"}},
	}
	for _, tt := range tests {
		e, err := Parse(tt.q)
		if err != nil {
			t.Fatal(err)
		}
		d := Drivers(e)
		if len(d) != 1 {
			t.Fatalf("Drivers(%q) = %v, want one access", tt.q, d)
		}
		env := graphEnv(t, fixture(), e)
		var got []string
		for _, r := range fixture() {
			if d[0].Holds(r, env) {
				got = append(got, id(r))
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v holds for %q, want %q", d[0], got, tt.want)
		}
	}
}

func TestAccessString(t *testing.T) {
	t.Parallel()
	e, err := Parse(`@Cat = 'a' OR jira@implements IN ('X', 'Y')`)
	if err != nil {
		t.Fatal(err)
	}
	want := `union([property[CAT] IN ('a')], [issue[implements] IN ('X', 'Y')])`
	if got := Drivers(e)[0].String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if e, err = Parse(`ext@Cost IN ('1', '2')`); err != nil {
		t.Fatal(err)
	}
	want = `external[COST] IN ('1', '2')`
	if got := Drivers(e)[0].String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
