// The clock a lease's validity is measured on: monotonic milliseconds (performance.now()), which an NTP step, a
// leap second or an operator setting the date never moves. A lease is trusted for its ttl after the renewal was sent;
// on the wall clock a step back would stretch that trust past Redis's own expiry (another replica drives the order
// meanwhile) and a step forward would drop every lease at once. Readings are only ever compared within one process.
export const monotonicNow = (): number => performance.now();
