// The optional X-User-Timezone header, `GMT +HH:MM (<IANA timezone name>)`. Its one pattern lives with the order's
// fields (machines/order-request.ts): the command contract checks it at intake and the client again before sending.
// The document says omitting the header "never fails a request", so a value the exchange could not use is dropped
// (with a warning), never a reason to fail an order. Assumption (the document shows no bounds): offsets run from
// -14:00 to +14:00 and the name is an IANA zone this runtime's ICU knows ("UTC", "Europe/Berlin",
// "America/Argentina/Buenos_Aires").
import { userTimezoneExample, userTimezonePattern } from '../../machines/order-request.ts';

function knownZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** Why a value cannot be sent as X-User-Timezone, or undefined when it can. */
export function userTimezoneProblem(value: string): string | undefined {
  if (!userTimezonePattern.test(value)) return `does not look like "${userTimezoneExample}"`;
  const name = /\(([^)]*)\)$/.exec(value)?.[1] ?? '';
  if (!knownZone(name)) return `"${name}" is not a known IANA timezone name`;
  return undefined;
}
