package wikiweb

// The traceability graph of a requirement's page: an inline SVG laid out in
// layers (columns), left to right: what the requirement's dependencies
// depend on, its dependencies, the requirement, what depends on it, what
// depends on those, and its issue links. Edges point from the requirement
// that references to the one referenced (and from the requirement to its
// issues); each node links to its page. No JavaScript: hovering shows the
// SVG <title>s, the layout is computed here.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Geometry of the graph, in SVG user units (CSS pixels: the SVG is drawn
// at its natural size in a scrolling box, never shrunk, so that its text
// stays readable whatever the number of nodes).
const (
	colWidth     = 210
	colGap       = 80
	nodeHeight   = 28
	rowGap       = 10
	headerHeight = 34
	// captionHeight is the room of the "Issues" caption under the
	// requirement.
	captionHeight = 24
	margin        = 12
	maxLabel      = 28
	// maxPerColumn bounds each column; the page says how many were left
	// out (the lists above the graph have them all).
	maxPerColumn = 60
)

type graph struct {
	Width, Height int
	Columns       []graphColumn
	Nodes         []graphNode
	Edges         []graphEdge
	Omitted       int
}

// graphColumn is a caption: of a column, or of the issues under the
// requirement.
type graphColumn struct {
	X, Y  int
	Label string
}

type graphNode struct {
	X, Y, W, H   int
	TextX, TextY int
	Label, Title string
	// URL is the node's page ("" for an issue: the wiki knows no issue
	// page).
	URL   string
	Class string
}

type graphEdge struct {
	D     string // the path's d attribute
	Title string
	Class string
}

// layer indexes of the columns, left to right.
const (
	layerDeps2 = iota
	layerDeps1
	layerSelf
	layerRev1
	layerRev2
	layerIssues
	layerCount
)

var layerLabels = [layerCount]string{
	"Their dependencies", "Depends on", "This requirement", "Depended on by", "Depended on by those", "Issues",
}

// placed is a node while the layout is computed.
type placed struct {
	layer int
	index int
	id    requirement.ID // of a requirement node (current version)
	node  graphNode
}

// layoutGraph lays out the graph of r: level1 holds the current rows of
// the requirements linked to r, level2 those linked to level1's (empty for
// a baseline copy, whose graph shows its own links only).
func layoutGraph(r *requirement.Requirement, level1, level2 map[requirement.ID]*requirement.Requirement) *graph {
	g := &graph{}
	var layers [layerCount][]*placed
	byID := map[requirement.ID]*placed{}
	row := func(id requirement.ID) *requirement.Requirement {
		if x := level1[id]; x != nil {
			return x
		}
		return level2[id]
	}
	add := func(layer int, space, key string) {
		id := requirement.NewID(space, key, 0)
		if _, ok := byID[id]; ok {
			return
		}
		if len(layers[layer]) >= maxPerColumn {
			g.Omitted++
			byID[id] = nil // counted once
			return
		}
		label := key
		if space != r.SpaceKey {
			label = space + "/" + key
		}
		class, status := "node undefined", "no page defines it"
		if x := row(id); x != nil && x.Status != "" {
			class, status = "node "+strings.ToLower(string(x.Status)), string(x.Status)
		}
		p := &placed{layer: layer, index: len(layers[layer]), id: id, node: graphNode{
			Label: clipLabel(label), Title: fmt.Sprintf("%s/%s (%s)", space, key, status), URL: reqURL(space, key, 0), Class: class,
		}}
		layers[layer] = append(layers[layer], p)
		byID[id] = p
	}

	self := &placed{layer: layerSelf, node: graphNode{
		Label: clipLabel(r.Key), Title: fmt.Sprintf("%s/%s (%s)", r.SpaceKey, r.Key, r.Status),
		URL: reqURL(r.SpaceKey, r.Key, r.Baseline), Class: "node self",
	}}
	layers[layerSelf] = []*placed{self}
	byID[requirement.NewID(r.SpaceKey, r.Key, 0)] = self

	for _, d := range r.Dependencies {
		add(layerDeps1, d.SpaceKey, d.Key)
	}
	for _, d := range r.ReverseDependencies {
		add(layerRev1, d.SpaceKey, d.Key)
	}
	// The second level, in the order of the first (fewer crossings).
	for _, p := range slices.Clone(layers[layerDeps1]) {
		if x := row(p.id); x != nil {
			for _, d := range x.Dependencies {
				add(layerDeps2, d.SpaceKey, d.Key)
			}
		}
	}
	for _, p := range slices.Clone(layers[layerRev1]) {
		if x := row(p.id); x != nil {
			for _, d := range x.ReverseDependencies {
				add(layerRev2, d.SpaceKey, d.Key)
			}
		}
	}
	for _, l := range r.Issues {
		label := l.IssueKey
		title := fmt.Sprintf("%s: %s, origin %s", l.IssueKey, l.Relationship, l.Origin())
		if l.ServiceID != "" {
			title += ", integration " + l.ServiceID
		}
		if len(layers[layerIssues]) >= maxPerColumn {
			g.Omitted++
			continue
		}
		layers[layerIssues] = append(layers[layerIssues], &placed{layer: layerIssues, index: len(layers[layerIssues]),
			node: graphNode{Label: clipLabel(label), Title: title, Class: "node issue " + strings.ToLower(string(l.Origin()))}})
	}

	// Columns: only the layers that have nodes, left to right. The issues
	// sit in the requirement's column, below it under a caption, so that
	// their edges cross no other node.
	step := nodeHeight + rowGap
	colHeight := func(layer int) int {
		h := len(layers[layer]) * step
		if layer == layerSelf && len(layers[layerIssues]) > 0 {
			h += (len(layers[layerIssues]))*step + captionHeight
		}
		return h
	}
	tallest := 0
	for layer := range layers {
		tallest = max(tallest, colHeight(layer))
	}
	g.Height = headerHeight + tallest + margin
	x := margin
	if len(layers[layerIssues]) > 0 && len(layers[layerDeps1]) == 0 {
		x += colGap - 8 // room for the arcs to the issues, left of the requirement
	}
	for layer, nodes := range layers {
		if len(nodes) == 0 || layer == layerIssues {
			continue
		}
		g.Columns = append(g.Columns, graphColumn{X: x + colWidth/2, Y: headerHeight - 16, Label: layerLabels[layer]})
		// Each column is centred vertically, so that the requirement sits
		// in the middle of its links.
		y := headerHeight + (tallest-colHeight(layer))/2
		place := func(p *placed) {
			p.node.X, p.node.Y, p.node.W, p.node.H = x, y, colWidth, nodeHeight
			p.node.TextX, p.node.TextY = x+colWidth/2, y+nodeHeight/2+5
			y += step
		}
		for _, p := range nodes {
			place(p)
		}
		if layer == layerSelf && len(layers[layerIssues]) > 0 {
			y += captionHeight
			g.Columns = append(g.Columns, graphColumn{X: x + colWidth/2, Y: y - 16, Label: layerLabels[layerIssues]})
			for _, p := range layers[layerIssues] {
				place(p)
			}
		}
		x += colWidth + colGap
	}
	g.Width = x - colGap + margin

	// Edges: every link of the rows read (the requirement and its first
	// level) whose two ends are drawn, once.
	type edgeKey struct {
		from, to *placed
		rel      string
	}
	seen := map[edgeKey]bool{}
	addEdge := func(from, to *placed, rel, class string) {
		if from == nil || to == nil || from == to || seen[edgeKey{from, to, rel}] {
			return
		}
		seen[edgeKey{from, to, rel}] = true
		g.Edges = append(g.Edges, graphEdge{D: edgePath(from, to), Title: fmt.Sprintf("%s %s %s", from.node.Label, rel, to.node.Label), Class: class})
	}
	sources := []*requirement.Requirement{r}
	for _, l := range [...]int{layerDeps1, layerRev1} {
		for _, p := range layers[l] {
			if x := row(p.id); x != nil {
				sources = append(sources, x)
			}
		}
	}
	for _, src := range sources {
		from := byID[requirement.NewID(src.SpaceKey, src.Key, 0)]
		for _, d := range src.Dependencies {
			addEdge(from, byID[d.Target()], d.Relationship, "edge")
		}
		for _, d := range src.ReverseDependencies {
			addEdge(byID[d.Target()], from, d.Relationship, "edge")
		}
	}
	for i, p := range layers[layerIssues] {
		addEdge(self, p, r.Issues[i].Relationship, "edge issue")
	}
	// Nodes in a stable order: layer, then place.
	var all []*placed
	for _, l := range layers {
		all = append(all, l...)
	}
	slices.SortStableFunc(all, func(a, b *placed) int { return cmp.Or(cmp.Compare(a.layer, b.layer), cmp.Compare(a.index, b.index)) })
	for _, p := range all {
		g.Nodes = append(g.Nodes, p.node)
	}
	return g
}

// edgePath is a cubic curve from one node to another: right side to left
// side between columns, an arc out of the right side within a column.
func edgePath(from, to *placed) string {
	a, b := from.node, to.node
	ay, by := a.Y+a.H/2, b.Y+b.H/2
	switch {
	case a.X < b.X:
		x1, x2 := a.X+a.W, b.X
		dx := (x2 - x1) / 2
		return fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, ay, x1+dx, ay, x2-dx, by, x2, by)
	case a.X > b.X:
		x1, x2 := a.X, b.X+b.W
		dx := (x1 - x2) / 2
		return fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, ay, x1-dx, ay, x2+dx, by, x2, by)
	default: // within a column (the requirement to its issues): an arc left of it
		x := a.X
		bulge := min(colGap-8, 24+abs(by-ay)/6)
		return fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x, ay, x-bulge, ay, x-bulge, by, x, by)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// clipLabel shortens a node's label to what its box holds; the node's
// title has it in full.
func clipLabel(s string) string {
	if utf8.RuneCountInString(s) <= maxLabel {
		return s
	}
	return string([]rune(s)[:maxLabel-1]) + "…"
}
