import { describe, expect, it } from '@jest/globals';

import { escapeFilterValue, layoutCaption, renderArguments } from '../../worker/providers/ffmpegVideo.ts';

describe('escapeFilterValue', () => {
  it('escapes for the option level, then for the filtergraph level', () => {
    expect(escapeFilterValue('/tmp/a/caption.txt')).toBe('/tmp/a/caption.txt');
    expect(escapeFilterValue('C:x')).toBe('C\\\\:x');
    expect(escapeFilterValue("it's")).toBe("it\\\\\\'s");
    expect(escapeFilterValue('a[b],c;d')).toBe('a\\[b\\]\\,c\\;d');
  });
});

describe('layoutCaption', () => {
  it('wraps words to the line width', () => {
    expect(layoutCaption('one two three four', 9, 5)).toBe('one two\nthree\nfour');
  });

  it('breaks a word longer than a line and drops control characters', () => {
    expect(layoutCaption('abcdefghij\tk\u0000l', 4, 5)).toBe('abcd\nefgh\nij k\nl');
  });

  it('cuts to the lines that fit, ending in an ellipsis', () => {
    expect(layoutCaption('aa bb cc dd ee', 2, 2)).toBe('aa\nb…');
  });
});

describe('renderArguments', () => {
  it('reads the caption from a file, never expands it, and asks for H.264 yuv420p with faststart', () => {
    const args = renderArguments({
      width: 1280,
      height: 720,
      fontSize: 40,
      seconds: 3,
      captionFile: '/tmp/x/caption.txt',
      outputPath: '/tmp/x/out.mp4',
    });
    const filter = args[args.indexOf('-vf') + 1]!;
    expect(filter).toMatch(
      /^drawtext=fontfile=\S+DejaVuSans\.ttf:textfile=\/tmp\/x\/caption\.txt:expansion=none:/,
    );
    expect(args).toEqual(
      expect.arrayContaining(['libx264', 'yuv420p', '+faststart', 'color=c=0x1e293b:s=1280x720:r=25']),
    );
    expect(args[args.indexOf('-t') + 1]).toBe('3');
    expect(args.at(-1)).toBe('/tmp/x/out.mp4');
  });
});
