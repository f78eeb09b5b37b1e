// Traffic per database from two readings of /admin/metrics: pure, unit-tested under Node.

/** Merged write commands of one database's merger stats. */
function writesOf(stats) {
  return (stats && (stats.MergedCommands ?? stats.merged_commands)) || 0;
}

/**
 * `[{ name, requestsPerSecond, writesPerSecond, loaded }]` between readings `previous` and `current` taken
 * `seconds` apart, busiest first. Without a previous reading the rates are null.
 */
export function trafficPerDatabase(previous, current, seconds) {
  const names = new Set([...Object.keys(current.DatabaseRequests || {}), ...Object.keys(current.Databases || {})]);
  const rate = (now, before) => (previous && seconds > 0 ? Math.max(0, now - before) / seconds : null);
  const rows = [...names].map((name) => ({
    name,
    loaded: Boolean((current.Databases || {})[name]),
    requestsPerSecond: rate((current.DatabaseRequests || {})[name] || 0, ((previous && previous.DatabaseRequests) || {})[name] || 0),
    writesPerSecond: rate(writesOf((current.Databases || {})[name]), writesOf(((previous && previous.Databases) || {})[name])),
  }));
  return rows.sort((a, b) => (b.requestsPerSecond || 0) - (a.requestsPerSecond || 0) || a.name.localeCompare(b.name));
}
