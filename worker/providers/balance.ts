import {
  isRouteGroup,
  type RouteEntry,
  type RouteGroup,
  type RouteStep,
} from '../../shared/config/providersConfig.ts';
import { type Clock, systemClock } from '../../shared/primitives/clock.ts';
import { type ChatRequest, ProviderError } from '../../shared/providers/types.ts';
import type { EntryClients } from './clientTypes.ts';

// The weight of each new time-to-first-token sample in a member's moving average: a few calls move it.
const smoothing = 0.3;
// A figure this old no longer describes the member: it is probed again (one call) and then replaced.
// Without this a member once slow would never be sent a call again while another answered faster.
const figureLifetimeMs = 60_000;

/** What this process knows of one member (a provider/model) now. */
type MemberLoad = { inFlight: number; ttftMs: number | undefined; measuredAt: number };

/** How an attempt ended, for its latency figure. */
type Ending = 'answered' | 'failed' | 'uncounted';

export type BalancerOptions = {
  /** What a retryable failure before any token counts as in the latency figure: the member's whole timeout. */
  failurePenaltyMs(entry: RouteEntry): number;
  clock?: Clock;
};

const keyOf = (entry: RouteEntry) => `${entry.provider}/${entry.model}`;

/**
 * Picks the member of a balanced group each call tries first, and the order of the rest behind it.
 * Its figures (calls in flight, recent time to first token) are this process's own: each worker
 * balances what it sends, without asking the others (docs/providers.md).
 */
export class Balancer {
  private readonly loads = new Map<string, MemberLoad>();
  // Per group: the smooth weighted round-robin's running scores, and a turn that breaks ties.
  private readonly rounds = new Map<RouteGroup, { scores: number[]; turn: number }>();
  private readonly clock: Clock;
  private readonly failurePenaltyMs: (entry: RouteEntry) => number;

  constructor(options: BalancerOptions) {
    this.clock = options.clock ?? systemClock;
    this.failurePenaltyMs = options.failurePenaltyMs;
  }

  /**
   * A route's entries in the order one call tries them: each step in turn, a group's members in the
   * order its strategy gives when the call reaches it (a failed or skipped member falls to the next
   * member, a group whose members all failed to the next step).
   */
  *walk(steps: readonly RouteStep[]): Generator<RouteEntry> {
    for (const step of steps) {
      if (isRouteGroup(step)) yield* this.order(step);
      else yield step;
    }
  }

  /** A group's members, the one this call should go to first. */
  order(group: RouteGroup): RouteEntry[] {
    const round = this.roundOf(group);
    const turn = round.turn++ % group.members.length;
    // Ties go round in turn from a member that moves on each call, so idle members share the calls.
    const rotated = (i: number) => (i - turn + group.members.length) % group.members.length;
    const indices = group.members.map((_, i) => i);
    switch (group.strategy) {
      case 'weighted': {
        const first = this.weightedPick(group, round.scores);
        const rest = indices.filter((i) => i !== first).sort((a, b) => group.weights[b]! - group.weights[a]!);
        return [first, ...rest].map((i) => group.members[i]!);
      }
      case 'least-busy': {
        const busy = group.members.map((m) => this.loadOf(m).inFlight);
        indices.sort((a, b) => busy[a]! - busy[b]! || rotated(a) - rotated(b));
        return indices.map((i) => group.members[i]!);
      }
      case 'latency': {
        const ranks = group.members.map((m) => this.latencyRank(m));
        indices.sort(
          (a, b) =>
            ranks[a]!.probe - ranks[b]!.probe ||
            ranks[a]!.ttftMs - ranks[b]!.ttftMs ||
            ranks[a]!.inFlight - ranks[b]!.inFlight ||
            rotated(a) - rotated(b),
        );
        return indices.map((i) => group.members[i]!);
      }
      default: {
        const never: never = group.strategy;
        throw new Error(`unknown balancing strategy ${String(never)}`);
      }
    }
  }

  /**
   * One entry's clients, each call counted in flight while it runs and timed to its first token (a
   * streamed delta; for answers that come whole, the answer), for the strategies above.
   */
  observe(clients: Partial<EntryClients>, entry: RouteEntry): Partial<EntryClients> {
    const { text, image, embedding, transcription } = clients;
    const settle = async <A>(attempt: Attempt, run: () => Promise<A>, ending: (a: A) => Ending) => {
      try {
        const value = await run();
        attempt.end(ending(value));
        return value;
      } catch (error) {
        attempt.end(error instanceof ProviderError && error.retryable ? 'failed' : 'uncounted');
        throw error;
      }
    };
    const whole = <R, A>(call: (request: R) => Promise<A>) => {
      return (request: R) => {
        const attempt = this.start(entry);
        return settle(
          attempt,
          () => call(request),
          () => 'answered',
        );
      };
    };
    return {
      ...(text && {
        text: {
          chat: (request: ChatRequest) => {
            const attempt = this.start(entry);
            const onDelta = (piece: string) => {
              attempt.firstToken();
              request.onDelta?.(piece);
            };
            // A cancelled reply's time says nothing about the member: the caller stopped it.
            return settle(
              attempt,
              () => text.chat({ ...request, onDelta }),
              (a) => (a.finishReason === 'cancelled' ? 'uncounted' : 'answered'),
            );
          },
        },
      }),
      ...(image && { image: { generate: whole(image.generate.bind(image)) } }),
      ...(embedding && { embedding: { embed: whole(embedding.embed.bind(embedding)) } }),
      ...(transcription && {
        transcription: { transcribe: whole(transcription.transcribe.bind(transcription)) },
      }),
    };
  }

  private start(entry: RouteEntry): Attempt {
    const load = this.loadOf(entry);
    load.inFlight += 1;
    const started = this.clock();
    let firstMs: number | undefined;
    let ended = false;
    return {
      firstToken: () => {
        firstMs ??= this.clock() - started;
      },
      end: (ending) => {
        if (ended) return;
        ended = true;
        load.inFlight -= 1;
        const sample =
          firstMs ??
          (ending === 'answered'
            ? this.clock() - started
            : ending === 'failed'
              ? this.failurePenaltyMs(entry)
              : undefined);
        if (sample !== undefined) this.record(load, sample);
      },
    };
  }

  private record(load: MemberLoad, sampleMs: number): void {
    const now = this.clock();
    const stale = load.ttftMs === undefined || now - load.measuredAt >= figureLifetimeMs;
    load.ttftMs = stale ? sampleMs : load.ttftMs! + smoothing * (sampleMs - load.ttftMs!);
    load.measuredAt = now;
  }

  /**
   * A member with no recent figure and no call in flight is tried first (probe 0), so a new or
   * long-unused member gets measured; the rest go by their figure (none yet: last), then by calls in flight.
   */
  private latencyRank(entry: RouteEntry): { probe: number; ttftMs: number; inFlight: number } {
    const load = this.loadOf(entry);
    const fresh = load.ttftMs !== undefined && this.clock() - load.measuredAt < figureLifetimeMs;
    return {
      probe: !fresh && load.inFlight === 0 ? 0 : 1,
      ttftMs: load.ttftMs ?? Number.POSITIVE_INFINITY,
      inFlight: load.inFlight,
    };
  }

  /**
   * Smooth weighted round-robin (as nginx balances upstreams): each member's score grows by its
   * weight every call, the highest is picked and loses the total. Over any run of calls each member's
   * share is its weight's share to within one call, interleaved rather than in bursts.
   */
  private weightedPick(group: RouteGroup, scores: number[]): number {
    let best = 0;
    let total = 0;
    group.weights.forEach((weight, i) => {
      scores[i] = scores[i]! + weight;
      total += weight;
      if (scores[i]! > scores[best]!) best = i;
    });
    scores[best] = scores[best]! - total;
    return best;
  }

  private loadOf(entry: RouteEntry): MemberLoad {
    const key = keyOf(entry);
    let load = this.loads.get(key);
    if (load === undefined) {
      load = { inFlight: 0, ttftMs: undefined, measuredAt: 0 };
      this.loads.set(key, load);
    }
    return load;
  }

  private roundOf(group: RouteGroup): { scores: number[]; turn: number } {
    let round = this.rounds.get(group);
    if (round === undefined) {
      round = { scores: group.members.map(() => 0), turn: 0 };
      this.rounds.set(group, round);
    }
    return round;
  }
}

/** One call to a member: counted in flight from its start until `end`. */
type Attempt = { firstToken(): void; end(ending: Ending): void };
