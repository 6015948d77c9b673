package search

import "context"

// RunPlan runs req with its plan number i (0 is the one Search picks; the
// scan of the scope is always the last), for tests that compare plans.
func (s *Service) RunPlan(ctx context.Context, req Request, i int) (*Result, error) {
	req, scope, err := s.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.run(ctx, req, scope, i)
}

// PlanCount returns the number of plans req may be run with (1 when
// nothing can match: the empty plan).
func (s *Service) PlanCount(ctx context.Context, req Request) (int, error) {
	req, scope, err := s.prepare(ctx, req)
	if err != nil {
		return 0, err
	}
	p := newPlanner(s.store, req, scope)
	if p.empty {
		return 1, nil
	}
	return len(p.options()), nil
}
