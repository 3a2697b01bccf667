// Progress of a Maven download, read from its batch-mode output ("Downloaded from central: <url> (3.9 kB at ...)"):
// how many files and how many bytes so far, so a first `services:up` says what it is doing while it fetches the
// broker's jars instead of staying silent for minutes.
const units: Record<string, number> = { B: 1, kB: 1e3, KB: 1e3, MB: 1e6, GB: 1e9 };

export class MavenProgress {
  files = 0;
  bytes = 0;

  /** Reads one output line; returns true when it reported a finished download. */
  feed(line: string): boolean {
    const match = /Downloaded from [^:]+: \S+ \(([\d.]+) (B|kB|KB|MB|GB)\b/.exec(line);
    if (!match) return false;
    this.files++;
    this.bytes += Math.round(Number(match[1]) * (units[match[2]!] ?? 1));
    return true;
  }

  describe(): string {
    const mb = this.bytes / 1e6;
    return `${this.files} files, ${mb >= 10 ? mb.toFixed(0) : mb.toFixed(1)} MB downloaded`;
  }
}
