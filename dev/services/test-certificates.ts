// Throw-away certificates for secured local services (tests only): a CA, a server certificate for the names and
// addresses given, and a client certificate, made with the machine's `openssl`. The server certificate is also
// packed as a PKCS#12 keystore, the form the Kafka broker reads.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestCertificates {
  dir: string;
  caFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  /** PKCS#12 keystore with the server key and certificate chain, protected by keystorePassword. */
  serverKeystoreFile: string;
  keystorePassword: string;
  clientCertFile: string;
  clientKeyFile: string;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: 'pipe' });
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '');
    throw new Error(`openssl ${args[0]} failed: ${stderr.slice(0, 2000)}`, { cause: error });
  }
}

/** Makes a CA and certificates signed by it; `serverNames` are DNS names, `serverIps` IP addresses of the server. */
export function makeTestCertificates(opts: {
  dir: string;
  serverNames: string[];
  serverIps?: string[];
}): TestCertificates {
  const dir = opts.dir;
  mkdirSync(dir, { recursive: true });
  const days = '2';
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      days,
      '-subj',
      '/CN=eow-test-ca',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  const san = [
    ...opts.serverNames.map((name) => `DNS:${name}`),
    ...(opts.serverIps ?? []).map((ip) => `IP:${ip}`),
  ].join(',');
  const issue = (name: string, subject: string, extensions: string[]): void => {
    openssl(
      [
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.csr`,
        '-subj',
        subject,
      ],
      dir,
    );
    writeFileSync(join(dir, `${name}.ext`), `${extensions.join('\n')}\n`);
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-out',
        `${name}.pem`,
        '-days',
        days,
        '-extfile',
        `${name}.ext`,
      ],
      dir,
    );
  };
  issue('server', `/CN=${opts.serverNames[0] ?? 'server'}`, [
    `subjectAltName=${san}`,
    'extendedKeyUsage=serverAuth',
  ]);
  issue('client', '/CN=eow-test-client', ['extendedKeyUsage=clientAuth']);
  const keystorePassword = randomBytes(12).toString('hex');
  openssl(
    [
      'pkcs12',
      '-export',
      '-in',
      'server.pem',
      '-inkey',
      'server.key',
      '-certfile',
      'ca.pem',
      '-name',
      'server',
      '-out',
      'server.p12',
      '-passout',
      `pass:${keystorePassword}`,
    ],
    dir,
  );
  return {
    dir,
    caFile: join(dir, 'ca.pem'),
    serverCertFile: join(dir, 'server.pem'),
    serverKeyFile: join(dir, 'server.key'),
    serverKeystoreFile: join(dir, 'server.p12'),
    keystorePassword,
    clientCertFile: join(dir, 'client.pem'),
    clientKeyFile: join(dir, 'client.key'),
  };
}
