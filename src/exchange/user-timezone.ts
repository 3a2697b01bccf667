// The optional X-User-Timezone header, `GMT +HH:MM (<IANA timezone name>)`. The one pattern lives here: the command
// contract checks it at intake and the client checks it again before sending. The document says omitting the
// header "never fails a request", so a value the exchange could not use is dropped (with a warning), never a
// reason to fail an order. Assumption (the document shows no bounds): offsets run from -14:00 to +14:00 and the
// name is an IANA zone this runtime's ICU knows ("UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires").

/** `GMT +HH:MM (Area/City)`: a sign, hours 00–14, minutes 00–59, and an IANA-shaped name of 1–4 segments. */
export const userTimezonePattern =
  /^GMT [+-](?:0\d|1[0-4]):[0-5]\d \([A-Za-z][A-Za-z0-9_+-]{0,31}(?:\/[A-Za-z0-9_+-]{1,31}){0,3}\)$/;

export const userTimezoneExample = 'GMT +02:00 (Europe/Berlin)';

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
