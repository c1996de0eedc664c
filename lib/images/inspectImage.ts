import { filetypeinfo } from 'magic-bytes.js';
import { imageSize } from 'image-size';

/** The raster formats an upload may be, with the one extension and Content-Type each is served with. */
export const IMAGE_FORMATS = {
  png: { contentType: 'image/png', extension: 'png' },
  jpeg: { contentType: 'image/jpeg', extension: 'jpg' },
  gif: { contentType: 'image/gif', extension: 'gif' },
  webp: { contentType: 'image/webp', extension: 'webp' },
} as const;
export type ImageFormat = keyof typeof IMAGE_FORMATS;

/**
 * Limits on what the image declares, so that a small file cannot make every mail client that
 * shows it decode gigabytes (a "decompression bomb": a 5 MB PNG can declare 100,000 × 100,000
 * pixels, 40 GB once decoded). 10,000 px a side covers any banner or full-width photo an email
 * uses at 2x or 3x; 25 megapixels (100 MB as RGBA) is a 5000 × 5000 image. Animated GIF and
 * WebP are judged by their canvas, which is what a decoder holds at once.
 */
export const MAX_IMAGE_SIDE = 10_000;
export const MAX_IMAGE_PIXELS = 25_000_000;

export interface InspectedImage {
  format: ImageFormat;
  contentType: string;
  extension: string;
  /** As displayed: a JPEG whose EXIF orientation turns it a quarter is reported turned. */
  width: number;
  height: number;
}

/** Why an upload is not an acceptable image; `code` is the API error code. */
export class ImageRejection extends Error {
  constructor(
    readonly code: 'EMPTY_FILE' | 'UNSUPPORTED_IMAGE_TYPE' | 'SVG_NOT_ALLOWED' | 'INVALID_IMAGE' | 'IMAGE_DIMENSIONS_TOO_LARGE',
    message: string,
  ) {
    super(message);
    this.name = 'ImageRejection';
  }
}

// magic-bytes.js type names for the accepted formats ('apng' is how it also names every PNG).
const FORMAT_BY_SIGNATURE: Record<string, ImageFormat> = { png: 'png', apng: 'png', jpg: 'jpeg', gif: 'gif', webp: 'webp' };
// image-size's names for the same.
const FORMAT_BY_SIZE_TYPE: Record<string, ImageFormat> = { png: 'png', jpg: 'jpeg', gif: 'gif', webp: 'webp' };

/**
 * What the bytes are, whatever the file's name or declared type says: the format from its
 * signature (magic-bytes.js), the size from its header (image-size), and both must agree, so a
 * file that only starts like an image, or is one format dressed as another, is refused.
 * Nothing is decoded: only headers are read, so a hostile file costs no more than its size.
 */
export function inspectImage(bytes: Buffer): InspectedImage {
  if (bytes.length === 0) throw new ImageRejection('EMPTY_FILE', 'The file is empty');
  const signatures = filetypeinfo(bytes);
  const format = signatures.map((s) => FORMAT_BY_SIGNATURE[s.typename]).find(Boolean);
  if (!format) {
    if (looksLikeSvg(bytes, signatures)) {
      throw new ImageRejection('SVG_NOT_ALLOWED', 'SVG images are not accepted: they can carry scripts. Upload a PNG, JPEG, GIF or WebP');
    }
    const seen = signatures[0]?.mime ?? signatures[0]?.typename;
    throw new ImageRejection(
      'UNSUPPORTED_IMAGE_TYPE',
      seen
        ? `The file is ${seen}, not an image Mailroom accepts (PNG, JPEG, GIF or WebP)`
        : 'The file is not an image Mailroom accepts (PNG, JPEG, GIF or WebP)',
    );
  }
  let size: ReturnType<typeof imageSize>;
  try {
    // A copy in an ArrayBuffer of its own: image-size reads through DataViews over the whole
    // underlying buffer, so a header cut short would otherwise be read on into whatever follows
    // the file in Node's shared Buffer pool instead of failing.
    size = imageSize(new Uint8Array(bytes));
  } catch (err) {
    throw new ImageRejection('INVALID_IMAGE', `The file starts like a ${format.toUpperCase()} image but is not a valid one (${(err as Error).message})`);
  }
  if (FORMAT_BY_SIZE_TYPE[size.type ?? ''] !== format || !(size.width > 0) || !(size.height > 0)) {
    throw new ImageRejection('INVALID_IMAGE', `The file starts like a ${format.toUpperCase()} image but is not a valid one`);
  }
  if (size.width > MAX_IMAGE_SIDE || size.height > MAX_IMAGE_SIDE || size.width * size.height > MAX_IMAGE_PIXELS) {
    throw new ImageRejection(
      'IMAGE_DIMENSIONS_TOO_LARGE',
      `The image declares ${size.width} × ${size.height} pixels; at most ${MAX_IMAGE_SIDE} a side and ${MAX_IMAGE_PIXELS / 1_000_000} megapixels are accepted`,
    );
  }
  // EXIF orientations 5 to 8 turn the picture a quarter: its displayed width is the stored height.
  const turned = format === 'jpeg' && (size.orientation ?? 1) >= 5;
  return {
    format,
    ...IMAGE_FORMATS[format],
    width: turned ? size.height : size.width,
    height: turned ? size.width : size.height,
  };
}

function looksLikeSvg(bytes: Buffer, signatures: Array<{ typename: string; mime?: string }>): boolean {
  if (signatures.some((s) => s.mime === 'image/svg+xml' || s.typename.toLowerCase() === 'svg')) return true;
  try {
    return imageSize(new Uint8Array(bytes)).type === 'svg';
  } catch {
    return /<svg[\s>]/i.test(bytes.subarray(0, 4096).toString('latin1'));
  }
}
