import { describe, expect, it } from 'vitest';
import { MavenProgress } from '../../../dev/services/maven-progress.ts';

describe('Maven download progress', () => {
  it('counts finished downloads and their sizes from batch-mode output, ignoring everything else', () => {
    const progress = new MavenProgress();
    const lines = [
      '[INFO] Scanning for projects...',
      '[INFO] Downloading from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/3.9.0/kafka_2.13-3.9.0.pom',
      '[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/3.9.0/kafka_2.13-3.9.0.pom (3.9 kB at 4.3 kB/s)',
      '[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/org/apache/kafka/kafka_2.13/3.9.0/kafka_2.13-3.9.0.jar (6.4 MB at 12 MB/s)',
      '[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/x/y/1/y-1.sha1 (40 B at 1.2 kB/s)',
    ];
    const reported = lines.map((line) => progress.feed(line));
    expect(reported).toEqual([false, false, true, true, true]);
    expect(progress.files).toBe(3);
    expect(progress.bytes).toBe(3_900 + 6_400_000 + 40);
    expect(progress.describe()).toBe('3 files, 6.4 MB downloaded');
  });
});
