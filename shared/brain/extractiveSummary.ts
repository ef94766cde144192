import type { SourceMessage } from '../db/queries/taskBrainSource.ts';

export type PageText = { title: string; body: string };

const maxSentences = 8;
const stopWords = new Set(
  'the a an and or but of to in on at for with is are was were be been it this that as by from i you we they he she not no do does did have has had can will would should could my your our their its'.split(
    ' ',
  ),
);

const sentencesOf = (text: string) =>
  text
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+/)
    .map((s) => s.trim())
    .filter((s) => s.length >= 12);

const wordsOf = (text: string) =>
  (text.toLowerCase().match(/\p{L}[\p{L}\p{N}'-]*/gu) ?? []).filter((w) => !stopWords.has(w));

/**
 * The `local` provider's page: an extractive summary, deterministic and offline. The sentences whose
 * words recur most across the conversation are kept, in conversation order, under the task's title.
 * It is labelled as extractive so nobody mistakes it for a model's summary.
 */
export function extractiveSummary(taskTitle: string, messages: readonly SourceMessage[]): PageText {
  const frequency = new Map<string, number>();
  for (const m of messages) for (const w of wordsOf(m.text)) frequency.set(w, (frequency.get(w) ?? 0) + 1);
  const candidates = messages.flatMap((m) => sentencesOf(m.text));
  const scored = candidates.map((sentence, index) => {
    const words = wordsOf(sentence);
    const score = words.reduce((sum, w) => sum + (frequency.get(w) ?? 0), 0) / Math.max(1, words.length);
    return { sentence, index, score };
  });
  const kept = [...scored]
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .slice(0, maxSentences)
    .sort((a, b) => a.index - b.index)
    .map((s) => s.sentence);
  const unique = [...new Set(kept)];
  const lines =
    unique.length > 0
      ? unique
      : messages
          .map((m) => m.text.trim())
          .filter(Boolean)
          .slice(0, 3);
  return {
    title: taskTitle,
    body: [
      'Extractive summary (sentences taken from the task by the offline summariser, not a model summary).',
      ...lines,
    ].join('\n'),
  };
}
