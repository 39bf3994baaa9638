// node-oidc-provider issuing RS256 JWT access tokens for client_credentials: the benchmark's peer.
// Usage: PORT=... [PROCESSES=N] node oidc_provider_bench.mjs
// prints {"issuer", "processes", "scheduling"} once every process listens.
//
// PROCESSES=1 (the default): one process. PROCESSES=N > 1: Node's cluster module, a primary forking N
// workers that share the port (the primary hands out connections round-robin unless
// NODE_CLUSTER_SCHED_POLICY=none). The primary makes the signing key once and passes it to every
// worker, so that a token verifies with the JWKS whichever worker signed it or serves /jwks;
// client_credentials JWT access tokens need no storage shared between the workers.
import cluster from 'node:cluster';
import { generateKeyPairSync } from 'node:crypto';

const port = Number(process.env.PORT);
const processes = Number(process.env.PROCESSES ?? 1);
const issuer = `http://127.0.0.1:${port}`;

function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: 'bench', alg: 'RS256', use: 'sig' };
}

function announce() {
  const scheduling = processes > 1 ? (cluster.schedulingPolicy === cluster.SCHED_RR ? 'rr' : 'none') : null;
  console.log(JSON.stringify({ issuer, processes, scheduling }));
}

async function serve(jwk, listening) {
  const { default: Provider } = await import('oidc-provider'); // not in the primary of a cluster
  const provider = new Provider(issuer, {
    clients: [{ client_id: 'bench', client_secret: 'bench-secret', grant_types: ['client_credentials'], redirect_uris: [], response_types: [],
      token_endpoint_auth_method: 'client_secret_post' }],
    jwks: { keys: [jwk] },
    scopes: ['api'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'urn:bench:api',
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({ scope: 'api', audience: 'urn:bench:api', accessTokenFormat: 'jwt', accessTokenTTL: 3600, jwt: { sign: { alg: 'RS256' } } }),
      },
    },
  });
  provider.listen(port, '127.0.0.1', listening);
}

function primary() {
  const env = { BENCH_SIGNING_JWK: JSON.stringify(signingKey()) };
  let listening = 0;
  let stopping = false;
  cluster.on('listening', () => {
    listening += 1;
    if (listening === processes) announce();
  });
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) {
      console.error(`worker ${worker.process.pid} ended (${signal ?? code}): stopping`);
      stop(1);
    } else if (Object.keys(cluster.workers).length === 0) {
      process.exit();
    }
  });
  function stop(status) {
    stopping = true;
    process.exitCode = status;
    const workers = Object.values(cluster.workers);
    if (workers.length === 0) process.exit(status);
    for (const worker of workers) worker.process.kill('SIGTERM');
  }
  process.on('SIGTERM', () => stop(0));
  process.on('SIGINT', () => stop(0));
  for (let i = 0; i < processes; i += 1) cluster.fork(env);
}

if (processes > 1 && cluster.isPrimary) {
  primary();
} else if (cluster.isWorker) {
  await serve(JSON.parse(process.env.BENCH_SIGNING_JWK), () => {});
} else {
  await serve(signingKey(), announce);
}
