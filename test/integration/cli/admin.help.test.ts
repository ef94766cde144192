import { describe, expect, it } from '@jest/globals';

import { commands } from '../../../cli/admin.ts';
import { commandHelp } from '../../../cli/help.ts';
import { admin } from '../../helpers/cli.ts';

// Nothing listens here: help and argument checks must answer without reaching a database.
const env = { DATABASE_URL: 'postgres://svc:svc@127.0.0.1:1/nowhere' };

type Help = {
  command: string;
  summary: string;
  usage: string;
  flags: { flag: string; value?: string; required: boolean; description: string }[];
};
type List = { usage: string; commands: { command: string; summary: string; usage: string }[] };

describe('operator CLI help', () => {
  it('--help lists every command as one JSON object on stdout, exit 0', async () => {
    const out = await admin(['--help'], env, { viaNpm: true });
    expect(out).toMatchObject({ code: 0, stderr: null });
    const list = out.stdout as List;
    expect(list.usage).toBe('npm run --silent admin -- <noun> <verb> [flags]');
    expect(list.commands.map((c) => c.command)).toEqual(Object.keys(commands));
    for (const entry of list.commands) {
      expect(entry.summary).not.toBe('');
      expect(entry.usage.startsWith(`${entry.command} `)).toBe(true);
    }
    // `-h` is the same, and `<noun> --help` narrows the list to that noun's commands.
    expect((await admin(['-h'], env)).stdout).toEqual(list);
    const keys = await admin(['key', '--help'], env);
    expect(keys.code).toBe(0);
    expect((keys.stdout as List).commands.map((c) => c.command)).toEqual([
      'key create',
      'key list',
      'key revoke',
      'key roll',
    ]);
  });

  it("<noun> <verb> --help prints the command's flags, their meaning and which are required", async () => {
    const key = await admin(['key', 'create', '--help'], env);
    expect(key).toMatchObject({ code: 0, stderr: null });
    const help = key.stdout as Help;
    expect(help).toEqual(commandHelp('key create', commands['key create']!));
    expect(help.usage).toMatch(
      /^npm run --silent admin -- key create --member M --projects P1,P2 \[--live\]/,
    );
    expect(help.flags.find((f) => f.flag === '--projects')).toEqual({
      flag: '--projects',
      value: 'P1,P2',
      required: true,
      description: expect.stringContaining('project ids'),
    });
    expect(help.flags.find((f) => f.flag === '--live')).toEqual({
      flag: '--live',
      required: false,
      description: expect.stringContaining('live key'),
    });
    // Every command documents every flag it parses (the same table drives parsing and help).
    for (const [name, command] of Object.entries(commands)) {
      const doc = commandHelp(name, command) as Help;
      expect(doc.summary).not.toBe('');
      expect(doc.flags.map((f) => f.flag)).toEqual(Object.keys(command.flags).map((f) => `--${f}`));
      for (const flag of doc.flags) {
        const spec = command.flags[flag.flag.slice(2)]!;
        expect({ name, flag: flag.flag, required: flag.required }).toEqual({
          name,
          flag: flag.flag,
          required: spec.required === true,
        });
        expect(flag.description.trim()).not.toBe('');
        // Required flags appear bare in the usage line, optional ones in brackets.
        const shown = spec.type === 'boolean' ? flag.flag : `${flag.flag} ${flag.value}`;
        expect(doc.usage).toContain(spec.required ? ` ${shown}` : `[${shown}]`);
      }
    }
  });

  it('checks the flags help calls required before it connects, and help runs nothing else', async () => {
    const cases = Object.entries(commands)
      .map(([name, command]) => ({
        name,
        required: Object.entries(command.flags)
          .filter(([, spec]) => spec.required)
          .map(([flag]) => `--${flag}`),
      }))
      .filter((c) => c.required.length > 0);
    const outs = await Promise.all(cases.map(({ name }) => admin(name.split(' '), env)));
    for (const [i, { name, required }] of cases.entries()) {
      const out = outs[i]!;
      expect({ name, code: out.code, stdout: out.stdout }).toEqual({ name, code: 1, stdout: null });
      const { error } = out.stderr as { error: { code: string; message: string } };
      expect(error.code).toBe('invalid_arguments');
      for (const flag of required) expect(error.message).toContain(flag);
    }
    // --help wins over the other arguments: nothing is validated or run.
    const out = await admin(['workspace', 'create', '--colour', 'red', '--help'], env);
    expect(out).toMatchObject({ code: 0, stderr: null, stdout: { command: 'workspace create' } });
  });

  it('answers unknown commands with a JSON error that points to --help', async () => {
    const cases = [['spaceship', '--help'], ['key', 'launch', '--help'], []];
    for (const out of await Promise.all(cases.map((args) => admin(args, env)))) {
      expect(out.code).toBe(1);
      expect(out.stdout).toBeNull();
      expect(out.stderr).toEqual({
        error: { code: 'unknown_command', message: expect.stringContaining('--help') },
      });
    }
  });
});
