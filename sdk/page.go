package sundial

import "iter"

// walk yields the items of each page that next returns, following its
// cursor from first until the last page.
func walk[T any](next func(cursor string) ([]T, string, error), first string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := first
		for {
			items, nextCursor, err := next(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			// An empty page with a cursor would loop for ever; the API
			// never sends one, but a walk must end whatever it gets.
			if nextCursor == "" || len(items) == 0 {
				return
			}
			cursor = nextCursor
		}
	}
}
