import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { ProviderError, type VideoProvider, type VideoRequest } from '../../shared/providers/types.ts';
import { frameSize } from '../../shared/videos/frame.ts';

const require = createRequire(import.meta.url);

// drawtext needs an explicit font file: a bare machine has no fontconfig set-up to find one.
const fontFile = path.join(
  path.dirname(require.resolve('dejavu-fonts-ttf/package.json')),
  'ttf/DejaVuSans.ttf',
);

export const localVideoModel = 'local-ffmpeg-title-card-1';

let ffmpegPath: string | undefined;

/**
 * The ffmpeg binary of @ffmpeg-installer/ffmpeg, looked up on first use: the package throws when it
 * has no binary for the platform, which must fail video jobs (for good: retrying finds none either),
 * not the start of a worker process that has every other kind of job to run.
 * @throws ProviderError (not retryable) when the platform has no binary.
 */
function ffmpegBinary(): string {
  if (ffmpegPath === undefined) {
    try {
      ffmpegPath = (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
    } catch (error) {
      throw new ProviderError(`no ffmpeg binary for this platform: ${String(error)}`, false, {
        cause: error,
      });
    }
  }
  return ffmpegPath;
}

// A render of up to 60 s at 1080p takes seconds; anything near this is a stuck process.
const renderTimeoutMs = 5 * 60_000;
const framesPerSecond = 25;
// ffmpeg's stderr is kept for the log only as far as this (it can print a line per frame).
const maxStderrChars = 4000;

/**
 * Escapes a value for a filter option inside a filtergraph: first the option level (`\`, `'`, `:`),
 * then the graph level (`\`, `'`, `[`, `]`, `,`, `;`), as ffmpeg-filters(1) "Notes on filtergraph
 * escaping" describes. Only our own paths go through it; the prompt travels in a file (textfile=).
 */
export function escapeFilterValue(value: string): string {
  const option = value.replace(/[\\':]/g, (c) => `\\${c}`);
  return option.replace(/[\\'[\],;]/g, (c) => `\\${c}`);
}

/**
 * The prompt laid out as title-card lines: drawtext does not wrap, so words are wrapped here to the
 * frame's width and the text cut to the lines that fit, ending in an ellipsis.
 */
export function layoutCaption(text: string, charsPerLine: number, maxLines: number): string {
  // Control characters would draw as boxes; tabs and line breaks become spaces.
  const words = text
    .replace(/[\p{Cc}\p{Cf}]/gu, ' ')
    .split(/\s+/)
    .filter(Boolean);
  const lines: string[] = [];
  let line = '';
  for (const raw of words) {
    for (let word = raw; word.length > 0;) {
      const room = line === '' ? charsPerLine : charsPerLine - line.length - 1;
      if (word.length <= room) {
        line = line === '' ? word : `${line} ${word}`;
        word = '';
      } else if (line === '') {
        // A word longer than a line is broken across lines.
        lines.push(word.slice(0, charsPerLine));
        word = word.slice(charsPerLine);
      } else {
        lines.push(line);
        line = '';
      }
    }
  }
  if (line !== '') lines.push(line);
  if (lines.length <= maxLines) return lines.join('\n');
  const kept = lines.slice(0, maxLines);
  kept[maxLines - 1] = `${kept[maxLines - 1]!.slice(0, charsPerLine - 1)}…`;
  return kept.join('\n');
}

/** The ffmpeg arguments of a title card showing the caption in `captionFile` for `seconds`. */
export function renderArguments(request: {
  width: number;
  height: number;
  fontSize: number;
  seconds: number;
  captionFile: string;
  outputPath: string;
}): string[] {
  const { width, height, fontSize, seconds } = request;
  const drawtext = [
    `fontfile=${escapeFilterValue(fontFile)}`,
    `textfile=${escapeFilterValue(request.captionFile)}`,
    // The text is drawn as it is: no %{...} expansion of anything the prompt contains.
    'expansion=none',
    'fontcolor=white',
    `fontsize=${fontSize}`,
    `line_spacing=${Math.round(fontSize / 3)}`,
    'x=(w-text_w)/2',
    'y=(h-text_h)/2',
  ].join(':');
  return [
    '-hide_banner',
    '-nostdin',
    '-nostats',
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    `color=c=0x1e293b:s=${width}x${height}:r=${framesPerSecond}`,
    '-vf',
    `drawtext=${drawtext}`,
    '-t',
    String(seconds),
    '-c:v',
    'libx264',
    '-preset',
    'veryfast',
    '-pix_fmt',
    'yuv420p',
    // The index goes first, so a player can start before the whole file has arrived.
    '-movflags',
    '+faststart',
    '-an',
    '-f',
    'mp4',
    request.outputPath,
  ];
}

/** Runs ffmpeg; killed when `signal` aborts (job cancelled, worker stopping) or after the timeout. */
function runFfmpeg(args: string[], signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpegBinary(), args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      signal: AbortSignal.any([signal, AbortSignal.timeout(renderTimeoutMs)]),
      killSignal: 'SIGKILL',
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < maxStderrChars) stderr += chunk;
    });
    child.once('error', (error) => {
      // An abort reaches here as an AbortError; a timeout may be retried, a cancellation is read
      // from the job's signal by the caller.
      reject(new ProviderError(`ffmpeg did not run: ${error.message}`, true, { cause: error }));
    });
    child.once('close', (code, killed) => {
      if (code === 0) resolve();
      else {
        const why = killed ? `killed by ${killed}` : `exit code ${String(code)}`;
        reject(new ProviderError(`ffmpeg failed (${why}): ${stderr.trim().slice(0, 500)}`, true));
      }
    });
  });
}

/**
 * The `local` provider's video (DESIGN.md "Providers"): a real H.264 MP4 rendered by the ffmpeg the
 * npm package ships, a title card showing the prompt for exactly the requested duration. The
 * negative prompt has nothing to steer in a title card and is not drawn.
 */
export const localVideo: VideoProvider = {
  async render(request: VideoRequest) {
    const { width, height } = frameSize(request.aspectRatio, request.resolution);
    const fontSize = Math.round(Math.min(width, height) / 18);
    // DejaVu Sans averages about 0.55 em per character; lines fill 85 % of the width.
    const charsPerLine = Math.max(8, Math.floor((width * 0.85) / (fontSize * 0.55)));
    const maxLines = Math.max(1, Math.floor((height * 0.8) / (fontSize * 1.35)));
    const scratch = await mkdtemp(path.join(os.tmpdir(), 'svc-caption-'));
    try {
      const captionFile = path.join(scratch, 'caption.txt');
      await writeFile(captionFile, layoutCaption(request.prompt, charsPerLine, maxLines) || ' ');
      await runFfmpeg(
        renderArguments({
          width,
          height,
          fontSize,
          seconds: request.durationSeconds,
          captionFile,
          outputPath: request.outputPath,
        }),
        request.signal,
      );
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
    return { model: localVideoModel, durationSeconds: request.durationSeconds, mimeType: 'video/mp4' };
  },
};
