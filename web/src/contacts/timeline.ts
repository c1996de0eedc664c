/**
 * One timeline out of several newest-first cursor lists (a contact's events and its emails): an
 * item is shown only once no unloaded item of another list can be newer, so "Load more" never
 * makes an item appear above one already shown. Each list says whether it has more pages.
 */
export interface TimelineSource<T> {
  items: readonly T[];
  hasMore: boolean;
}

export interface Timeline<Item> {
  /** Newest first, every item whose place is certain. */
  items: Item[];
  /** The lists to load a page of next (the ones holding the rest back); empty when everything is shown. */
  loadNext: number[];
}

/** `at` is an ISO instant; ties keep the sources' order (the first source's item first). */
export function mergeTimeline<Item>(sources: readonly TimelineSource<Item>[], at: (item: Item) => string): Timeline<Item> {
  const time = (item: Item) => Date.parse(at(item));
  // The oldest loaded moment of each list that has more: nothing older than the newest of these is certain yet.
  let cutoff = -Infinity;
  const frontiers = sources.map((source) => {
    if (!source.hasMore) return -Infinity;
    const last = source.items[source.items.length - 1];
    const frontier = last === undefined ? Infinity : time(last);
    cutoff = Math.max(cutoff, frontier);
    return frontier;
  });
  const all = sources.flatMap((source, index) => source.items.map((item, position) => ({ item, index, position, t: time(item) })));
  all.sort((a, b) => b.t - a.t || a.index - b.index || a.position - b.position);
  return {
    items: all.filter((entry) => entry.t >= cutoff).map((entry) => entry.item),
    loadNext: frontiers.flatMap((frontier, index) => (sources[index].hasMore && frontier === cutoff ? [index] : [])),
  };
}
