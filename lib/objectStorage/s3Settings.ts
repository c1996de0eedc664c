/** Where and how uploads are kept in an S3-compatible store. */
export interface S3Settings {
  /** undefined = AWS S3 itself (the SDK derives the endpoint from the region). */
  endpoint: string | undefined;
  bucket: string;
  region: string;
  /** undefined = the AWS SDK's default chain (AWS_ACCESS_KEY_ID, a web identity, an instance role). */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  forcePathStyle: boolean;
  /** Prepended to every object key, ending in '/' when set ('' = the bucket's root). */
  keyPrefix: string;
}

export interface S3Env {
  url?: string;
  endpoint?: string;
  bucket?: string;
  region?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle?: boolean;
  keyPrefix?: string;
}

// Most S3-compatible stores ignore the region but the signature needs one; MinIO's default.
const DEFAULT_REGION = 'us-east-1';

/**
 * S3_URL, or S3_BUCKET with its companions, into settings; null when neither is set.
 * - `s3://[KEY:SECRET@]bucket[/prefix][?region=eu-west-1]`: AWS S3 itself (virtual-hosted style).
 * - `http(s)://[KEY:SECRET@]host[:port]/bucket[/prefix][?region=…&forcePathStyle=false]`: any
 *   S3-compatible endpoint (MinIO, Ceph, R2, …), path-style unless told otherwise, since the
 *   bucket is already in the path and most self-hosted stores have no per-bucket host names.
 * The two ways are exclusive, so there is never a question of which value wins.
 */
export function s3SettingsFromEnv(env: S3Env): { s3: S3Settings | null } | { problem: string } {
  const separate = (['endpoint', 'bucket', 'region', 'accessKeyId', 'secretAccessKey', 'forcePathStyle', 'keyPrefix'] as const).filter(
    (k) => env[k] !== undefined,
  );
  if (env.url !== undefined) {
    if (separate.length) return { problem: 'S3_URL: set either S3_URL or the separate S3_* variables, not both' };
    return fromUrl(env.url);
  }
  if (!separate.length) return { s3: null };
  if (!env.bucket) return { problem: 'S3_BUCKET must be set when any other S3_* variable is' };
  if (Boolean(env.accessKeyId) !== Boolean(env.secretAccessKey)) return { problem: 'S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together' };
  return build({
    endpoint: env.endpoint,
    bucket: env.bucket,
    region: env.region,
    accessKeyId: env.accessKeyId,
    secretAccessKey: env.secretAccessKey,
    forcePathStyle: env.forcePathStyle,
    keyPrefix: env.keyPrefix,
  });
}

function fromUrl(value: string): { s3: S3Settings } | { problem: string } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { problem: 'S3_URL: not a URL (s3://bucket or https://host/bucket)' };
  }
  const accessKeyId = url.username ? decodeURIComponent(url.username) : undefined;
  const secretAccessKey = url.password ? decodeURIComponent(url.password) : undefined;
  if (Boolean(accessKeyId) !== Boolean(secretAccessKey)) return { problem: 'S3_URL: give both the access key id and the secret (KEY:SECRET@), or neither' };
  const path = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const region = url.searchParams.get('region') ?? undefined;
  const pathStyle = url.searchParams.get('forcePathStyle');
  if (pathStyle !== null && pathStyle !== 'true' && pathStyle !== 'false') return { problem: 'S3_URL: forcePathStyle must be true or false' };
  if (url.protocol === 's3:') {
    return build({
      endpoint: undefined,
      bucket: url.hostname,
      region,
      accessKeyId,
      secretAccessKey,
      forcePathStyle: pathStyle === null ? undefined : pathStyle === 'true',
      keyPrefix: path.join('/'),
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { problem: 'S3_URL: the scheme must be s3, http or https' };
  const [bucket, ...prefix] = path;
  if (!bucket) return { problem: 'S3_URL: name the bucket as the first path segment (https://host/bucket)' };
  return build({
    endpoint: `${url.protocol}//${url.host}`,
    bucket,
    region,
    accessKeyId,
    secretAccessKey,
    forcePathStyle: pathStyle === null ? undefined : pathStyle === 'true',
    keyPrefix: prefix.join('/'),
  });
}

function build(v: {
  endpoint: string | undefined;
  bucket: string;
  region: string | undefined;
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  forcePathStyle: boolean | undefined;
  keyPrefix: string | undefined;
}): { s3: S3Settings } | { problem: string } {
  // S3's own rules for bucket names (3-63 of a-z, 0-9, '.', '-'), so a typo fails at start, not on the first upload.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(v.bucket)) return { problem: `S3 bucket "${v.bucket}" is not a valid bucket name` };
  const keyPrefix = (v.keyPrefix ?? '').replace(/^\/+|\/+$/g, '');
  return {
    s3: {
      endpoint: v.endpoint,
      bucket: v.bucket,
      region: v.region ?? DEFAULT_REGION,
      credentials: v.accessKeyId && v.secretAccessKey ? { accessKeyId: v.accessKeyId, secretAccessKey: v.secretAccessKey } : undefined,
      // An endpoint of one's own rarely has per-bucket host names; AWS itself prefers virtual-hosted.
      forcePathStyle: v.forcePathStyle ?? v.endpoint !== undefined,
      keyPrefix: keyPrefix ? `${keyPrefix}/` : '',
    },
  };
}
