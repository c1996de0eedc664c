/** What LoadMore needs of a TanStack infinite query (the `useInfiniteQuery` result itself fits). */
interface PagedQuery {
  hasNextPage: boolean;
  isFetchingNextPage: boolean;
  fetchNextPage: () => Promise<unknown>;
}

/** A cursor list's "Load more" button under its table: shown while the API says there is more, busy while a page loads. */
export function LoadMore({ query }: { query: PagedQuery }) {
  if (!query.hasNextPage) return null;
  return (
    <div className="card-actions">
      <button
        type="button"
        className="button"
        onClick={() => void query.fetchNextPage()}
        disabled={query.isFetchingNextPage}
        aria-busy={query.isFetchingNextPage || undefined}
      >
        Load more
      </button>
    </div>
  );
}
