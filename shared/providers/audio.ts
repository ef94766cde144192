/**
 * Audio helpers that need no codec: which uploads count as audio, and how long a clip is when its
 * container says so (WAV) or, failing that, an estimate from its size.
 */

const audioExtensions = new Set([
  'mp3',
  'mp4',
  'm4a',
  'mpeg',
  'mpga',
  'wav',
  'webm',
  'ogg',
  'oga',
  'opus',
  'flac',
  'aac',
  'aiff',
  'aif',
  'amr',
  '3gp',
  'caf',
]);

// Containers that hold audio but are labelled as video or generic by browsers and curl.
const audioContainerTypes = new Set([
  'video/mp4',
  'video/webm',
  'video/ogg',
  'video/3gpp',
  'application/ogg',
]);

/**
 * Is this upload audio? `audio/*` and the audio containers are; a generic
 * `application/octet-stream` is judged by its file extension, as clients often send that.
 */
export function isAudioUpload(mimeType: string, filename: string): boolean {
  const type = mimeType.toLowerCase().split(';')[0]!.trim();
  if (type.startsWith('audio/') || audioContainerTypes.has(type)) return true;
  if (type === 'application/octet-stream' || type === '') {
    const ext = filename.toLowerCase().split('.').pop() ?? '';
    return audioExtensions.has(ext);
  }
  return false;
}

/** Duration of a PCM WAV file from its header, or undefined when `data` is not a WAV this reads. */
export function wavDurationSeconds(data: Buffer): number | undefined {
  if (
    data.length < 12 ||
    data.toString('ascii', 0, 4) !== 'RIFF' ||
    data.toString('ascii', 8, 12) !== 'WAVE'
  ) {
    return undefined;
  }
  let byteRate: number | undefined;
  let offset = 12;
  while (offset + 8 <= data.length) {
    const id = data.toString('ascii', offset, offset + 4);
    const size = data.readUInt32LE(offset + 4);
    if (id === 'fmt ' && offset + 16 <= data.length) byteRate = data.readUInt32LE(offset + 8 + 8);
    if (id === 'data') {
      if (!byteRate) return undefined;
      // A streamed WAV may declare 0 or 0xFFFFFFFF; the bytes present are then the truth.
      const available = data.length - (offset + 8);
      const bytes = size === 0 || size === 0xffffffff ? available : Math.min(size, available);
      return bytes / byteRate;
    }
    offset += 8 + size + (size % 2);
  }
  return undefined;
}

// 128 kbit/s, a common bitrate for compressed speech recordings.
const assumedBytesPerSecond = 16_000;

/** The clip's length: exact for WAV, otherwise estimated from its size. */
export function audioDurationSeconds(data: Buffer): number {
  return wavDurationSeconds(data) ?? data.length / assumedBytesPerSecond;
}
