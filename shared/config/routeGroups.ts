import { z } from 'zod';

/**
 * How a group of route entries shares its load (docs/providers.md "Balancing inside a route"):
 * `weighted` in proportion to each member's weight, `least-busy` to the member with the fewest calls
 * in flight, `latency` to the member with the lowest recent time to first token.
 */
export const balanceStrategies = ['weighted', 'least-busy', 'latency'] as const;
export type BalanceStrategy = (typeof balanceStrategies)[number];

// Model ids may hold slashes themselves (OpenRouter's `anthropic/claude-sonnet-4`): the provider is
// what comes before the first.
export const routeEntry = z.string().regex(/^[^/\s]+\/\S+$/, { message: 'an entry is "<provider>/<model>"' });

/**
 * A string or an object, each read by its own schema. A zod union would report a bad member of
 * either shape as a bare "Invalid input"; this names the field at fault.
 */
function stringOrObject<S, O>(text: z.ZodType<S>, object: z.ZodType<O>, shape: string) {
  return z.unknown().transform((value, ctx): S | O => {
    const schema =
      typeof value === 'string'
        ? text
        : typeof value === 'object' && value !== null && !Array.isArray(value)
          ? object
          : undefined;
    const parsed = schema?.safeParse(value);
    if (parsed?.success) return parsed.data;
    const issues = parsed?.error.issues ?? [{ path: [], message: `is ${shape}` }];
    for (const issue of issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    return z.NEVER;
  });
}

const weightedMember = z
  .object({
    entry: routeEntry,
    // Relative shares: 3 and 1 send three calls in four to the first member.
    weight: z
      .number({ message: 'a weight is a number' })
      .positive({ message: 'a weight is more than 0' })
      .max(1_000_000, { message: 'a weight is at most 1000000' }),
  })
  .strict();

const member = stringOrObject(
  routeEntry,
  weightedMember,
  'a member: "<provider>/<model>", or {"entry": "<provider>/<model>", "weight": n} in a weighted group',
);

const groupSchema = z
  .object({
    strategy: z.enum(balanceStrategies, {
      message: `a group's strategy is one of ${balanceStrategies.join(', ')}`,
    }),
    members: z
      .array(member)
      .min(1, { message: 'a group needs at least one member' })
      .max(10, { message: 'a group has at most 10 members' }),
  })
  .strict()
  .superRefine((group, ctx) => {
    const seen = new Set<string>();
    group.members.forEach((m, i) => {
      const entry = typeof m === 'string' ? m : m.entry;
      if (seen.has(entry)) {
        ctx.addIssue({ code: 'custom', path: ['members', i], message: `${entry} is in this group twice` });
      }
      seen.add(entry);
      if (typeof m !== 'string' && group.strategy !== 'weighted') {
        ctx.addIssue({
          code: 'custom',
          path: ['members', i, 'weight'],
          message: `weights are read only by the weighted strategy, not ${group.strategy}`,
        });
      }
    });
  });

/** One item of a route as written: an entry, or a group of entries sharing load. */
export const routeItem = stringOrObject(
  routeEntry,
  groupSchema,
  'an entry "<provider>/<model>", or a group {"strategy": …, "members": […]}',
);
export type RouteItem = z.output<typeof routeItem>;

/** A group's members as entries (`<provider>/<model>`) with their weights (1 where none is given). */
export function groupMembers(group: Exclude<RouteItem, string>): { entry: string; weight: number }[] {
  return group.members.map((m) => (typeof m === 'string' ? { entry: m, weight: 1 } : m));
}
