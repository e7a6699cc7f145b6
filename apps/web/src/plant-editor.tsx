import {
  type NewPlant,
  type PlantPatch,
  type PlantRevision,
  type PlantStoreClient,
  PlantStoreError,
  PlantStorePreconditionFailedError,
} from "@plantstore/client";
import { printable } from "@plantstore/schema";
import { type FormEvent, type ReactNode, useEffect, useRef, useState } from "react";

import { ErrorAlert } from "./error-alert.tsx";
import { PrintableText } from "./printable-text.tsx";

/** What the live feed said about the open plant: how it is after a change, that it was deleted, or that changes may have been missed. */
export type PlantNews = { kind: "changed"; plant: NewPlant } | { kind: "deleted" } | { kind: "unknown" };

type Props = {
  client: PlantStoreClient;
  /** The plant as the table showed it when opened: on screen at once, while its revision (and ETag) is read. */
  plant: NewPlant;
  /** The feed's latest news of this plant: each new value is handled once. */
  news: PlantNews | undefined;
  /** The tag the table is filtered by, if any. */
  filterTag: string | undefined;
  onSaved: (plant: NewPlant) => void;
  onDeleted: (id: bigint) => void;
  onClose: () => void;
};

/** A refused save: the plant the edit was made on, the revision stored now, and the edit itself. */
type Conflict = { base: NewPlant; current: PlantRevision; edit: PlantPatch };

/** A change made elsewhere while the form is open, not taken into the form (yet). */
type ChangedElsewhere = { base: NewPlant; now: NewPlant };

const tagOf = (plant: NewPlant) => plant.tag ?? null;
const samePlant = (a: NewPlant, b: NewPlant) => a.name === b.name && tagOf(a) === tagOf(b);
const changesSomething = (edit: PlantPatch) => edit.name !== undefined || edit.tag !== undefined;

/**
 * What the person changed: the fields of the form that differ from the plant it was filled from,
 * and only those. Sent as a merge patch, it leaves every other field as it is stored, so a field
 * someone else changed meanwhile is not set back.
 */
function editOf(base: NewPlant, name: string, tag: string): PlantPatch {
  const typedTag = tag === "" ? null : tag;
  return { ...(name === base.name ? {} : { name }), ...(typedTag === tagOf(base) ? {} : { tag: typedTag }) };
}

/** `plant` after the merge patch `edit`, as the server applies it. */
function patched(plant: NewPlant, edit: PlantPatch): NewPlant {
  const tag = edit.tag === undefined ? plant.tag : (edit.tag ?? undefined);
  return { id: plant.id, name: edit.name ?? plant.name, ...(tag === undefined ? {} : { tag }) };
}

const tagCell = (tag: string | null | undefined): ReactNode =>
  tag === undefined || tag === null ? "(none)" : <PrintableText text={tag} />;
const UNCHANGED = "(unchanged)";

/** The plant the edit was made on, the one stored now, and the edit, field by field. */
function WhatChanged({ label, base, now, edit }: { label: string; base: NewPlant; now: NewPlant; edit: PlantPatch }) {
  return (
    <table aria-label={label}>
      <thead>
        <tr>
          <th scope="col">Field</th>
          <th scope="col">When you opened it</th>
          <th scope="col">Stored now</th>
          <th scope="col">Your edit</th>
        </tr>
      </thead>
      <tbody>
        <tr>
          <th scope="row">Name</th>
          <td>
            <PrintableText text={base.name} />
          </td>
          <td>
            <PrintableText text={now.name} />
          </td>
          <td>{edit.name === undefined ? UNCHANGED : <PrintableText text={edit.name} />}</td>
        </tr>
        <tr>
          <th scope="row">Tag</th>
          <td>{tagCell(base.tag)}</td>
          <td>{tagCell(now.tag)}</td>
          <td>{edit.tag === undefined ? UNCHANGED : tagCell(edit.tag)}</td>
        </tr>
      </tbody>
    </table>
  );
}

/** A field's text made visible beside it, when it holds characters that do not show as they are. */
function HiddenCharacters({ id, text }: { id: string; text: string }) {
  if (printable(text) === text) return null;
  return (
    <p id={id} className="hint">
      Hidden characters: <PrintableText text={text} />
    </p>
  );
}

/**
 * One plant, edited against the revision it was read at: Save sends what the person changed as a
 * merge patch with `If-Match`, so a change made elsewhere meanwhile is never overwritten unseen.
 * The feed's news of the plant shows as it comes: deleted, changed (take the new revision, or keep
 * editing), or out of the table's filter. What was typed stays in the form whatever happens.
 */
export function PlantEditor({ client, plant, news, filterTag, onSaved, onDeleted, onClose }: Props) {
  const { id } = plant;
  /** The stored revision a save is based on (its ETag goes in If-Match), once read. */
  const [revision, setRevision] = useState<PlantRevision | undefined>(undefined);
  /** The plant the form was filled from: the person's edit is what differs from it. */
  const [base, setBase] = useState<NewPlant>(plant);
  /** The plant as last known stored: read, saved or heard from the feed; undefined once deleted. */
  const [stored, setStored] = useState<NewPlant | undefined>(plant);
  const [name, setName] = useState(plant.name);
  const [tag, setTag] = useState(plant.tag ?? "");
  const [changed, setChanged] = useState<ChangedElsewhere | undefined>(undefined);
  const [conflict, setConflict] = useState<Conflict | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);
  const nameInput = useRef<HTMLInputElement>(null);
  const cancelDelete = useRef<HTMLButtonElement>(null);
  const conflictHeading = useRef<HTMLHeadingElement>(null);

  /** The state as last rendered, for what answers after an await. */
  const latest = useRef({ base, stored, name, tag, conflict });
  latest.current = { base, stored, name, tag, conflict };
  /** The plant a save in flight would store: the feed's report of it is this form's own change. */
  const saving = useRef<NewPlant | undefined>(undefined);
  /** A deletion from this form is in flight: the feed's report of it is no news. */
  const deleting = useRef(false);

  /** The form on the revision `onto`: the fields `edit` names keep what was typed, the others show `onto`. */
  const rebase = (onto: PlantRevision, edit: PlantPatch) => {
    setRevision(onto);
    setBase(onto.plant);
    setStored(onto.plant);
    setName(edit.name ?? onto.plant.name);
    setTag(edit.tag === undefined ? (onto.plant.tag ?? "") : (edit.tag ?? ""));
  };
  const deletedElsewhere = () => {
    setStored(undefined);
    setChanged(undefined);
    setConflict(undefined);
    setConfirming(false);
  };
  const typedEdit = () => editOf(latest.current.base, latest.current.name, latest.current.tag);

  /** The current revision, or undefined when the plant is gone. */
  const reread = async (): Promise<PlantRevision | undefined> => {
    try {
      return await client.getPlant(id);
    } catch (thrown) {
      if (thrown instanceof PlantStoreError && thrown.status === 404) return undefined;
      throw thrown;
    }
  };

  useEffect(() => {
    const stop = new AbortController();
    // The table's copy, which the form shows (and the person may edit) until the revision arrives.
    const opened = plant;
    client.getPlant(id, { signal: stop.signal }).then(
      (read) => {
        setError(undefined);
        setChanged((news) => (news !== undefined && samePlant(news.now, read.plant) ? undefined : news));
        const edit = editOf(opened, latest.current.name, latest.current.tag);
        if (changesSomething(edit) && !samePlant(read.plant, opened)) {
          // What was typed before the revision arrived was made on the table's copy, and the
          // stored plant differs from it: the edit was made on a revision the person never saw.
          // The form keeps what they see, and they choose as after a 412.
          setRevision(read);
          setStored(read.plant);
          setChanged(undefined);
          setConflict({ base: opened, current: read, edit });
          return;
        }
        rebase(read, edit);
      },
      (thrown: unknown) => {
        if (stop.signal.aborted) return;
        if (thrown instanceof PlantStoreError && thrown.status === 404) deletedElsewhere();
        else setError(thrown);
      },
    );
    return () => stop.abort();
    // `plant` is the copy the editor was opened with, and the editor is keyed by its id.
  }, [client, id]);

  /** The plant as stored, learned other than by a save of this form. */
  const heard = (now: NewPlant) => {
    const { stored: known, conflict: refused } = latest.current;
    if (saving.current !== undefined && samePlant(now, saving.current)) return;
    if (known !== undefined && samePlant(now, known)) return;
    setStored(now);
    if (refused !== undefined) {
      // The choice on screen compares with an older revision: it is shown with the one stored now.
      reread().then(
        (current) =>
          current === undefined ? deletedElsewhere() : setConflict((c) => (c === undefined ? c : { ...c, current })),
        setError,
      );
      return;
    }
    setChanged({ base: latest.current.base, now });
  };

  useEffect(() => {
    if (news === undefined) return;
    if (news.kind === "changed") heard(news.plant);
    else if (news.kind === "deleted") {
      if (!deleting.current) deletedElsewhere();
    } else {
      // Changes may have been missed: the plant is read again and compared.
      reread().then((current) => {
        if (current === undefined) {
          if (!deleting.current) deletedElsewhere();
        } else heard(current.plant);
      }, setError);
    }
    // Each piece of news is handled once, with the state as it is then (through `latest`).
  }, [news]);

  // Keyboard and screen reader users land on the plant they opened.
  useEffect(() => heading.current?.focus(), []);
  useEffect(() => {
    if (confirming) cancelDelete.current?.focus();
  }, [confirming]);
  useEffect(() => {
    if (conflict !== undefined) conflictHeading.current?.focus();
  }, [conflict]);

  const save = async (edit: PlantPatch, onto: PlantRevision, editBase: NewPlant) => {
    if (!changesSomething(edit)) {
      setNotice("Nothing to save: the form shows the plant as stored.");
      return;
    }
    setBusy(true);
    setError(undefined);
    setNotice(undefined);
    saving.current = patched(onto.plant, edit);
    try {
      const saved = await client.updatePlant(id, edit, { ifMatch: onto.etag });
      rebase(saved, {});
      setConflict(undefined);
      setChanged(undefined);
      setNotice("Saved.");
      onSaved(saved.plant);
    } catch (thrown) {
      if (thrown instanceof PlantStorePreconditionFailedError) {
        try {
          const current = await reread();
          if (current === undefined) deletedElsewhere();
          else {
            setStored(current.plant);
            setChanged(undefined);
            setConflict({ base: editBase, current, edit });
          }
        } catch (again) {
          setError(again);
        }
      } else {
        setError(thrown);
      }
    } finally {
      saving.current = undefined;
      setBusy(false);
    }
  };

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (revision === undefined || stored === undefined) return;
    void save(editOf(base, name, tag), revision, base);
  };

  // Only the fields the person changed are sent again, on the revision stored now.
  const reapply = () => {
    if (conflict !== undefined) void save(conflict.edit, conflict.current, conflict.current.plant);
  };
  const discard = () => {
    if (conflict !== undefined) rebase(conflict.current, {});
    setConflict(undefined);
    setNotice("Your edit was discarded; the form shows the plant as stored now.");
  };

  const takeNewRevision = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const current = await reread();
      if (current === undefined) {
        deletedElsewhere();
        return;
      }
      rebase(current, typedEdit());
      setChanged(undefined);
      setNotice("The form shows the plant as stored now, with what you changed kept.");
    } catch (thrown) {
      setError(thrown);
    } finally {
      setBusy(false);
    }
  };
  const keepEditing = () => {
    setChanged(undefined);
    nameInput.current?.focus();
  };

  const remove = async () => {
    setBusy(true);
    setError(undefined);
    deleting.current = true;
    try {
      // With the ETag read, a plant changed elsewhere meanwhile is not deleted unseen.
      await client.deletePlant(id, revision === undefined ? {} : { ifMatch: revision.etag });
      onDeleted(id);
    } catch (thrown) {
      setConfirming(false);
      if (thrown instanceof PlantStorePreconditionFailedError) {
        const current = await reread().catch(() => undefined);
        if (current !== undefined) rebase(current, typedEdit());
        setError(new Error("Not deleted: the plant changed since you opened it. Check it and delete again."));
      } else if (thrown instanceof PlantStoreError && thrown.status === 404) {
        deletedElsewhere();
      } else {
        setError(thrown);
      }
    } finally {
      deleting.current = false;
      setBusy(false);
    }
  };

  const idText = id.toString();
  const gone = stored === undefined;
  const showsNameHint = printable(name) !== name;
  const showsTagHint = printable(tag) !== tag;
  return (
    <section className="editor" aria-labelledby="editor-heading">
      <h2 id="editor-heading" tabIndex={-1} ref={heading}>
        Plant {idText}
      </h2>
      <form aria-label={`Edit plant ${idText}`} onSubmit={submit}>
        <label htmlFor="edit-name">Name</label>
        <input
          id="edit-name"
          ref={nameInput}
          value={name}
          onChange={(event) => setName(event.target.value)}
          aria-describedby={showsNameHint ? "edit-name-hidden" : undefined}
        />
        <HiddenCharacters id="edit-name-hidden" text={name} />
        <label htmlFor="edit-tag">Tag</label>
        <input
          id="edit-tag"
          value={tag}
          onChange={(event) => setTag(event.target.value)}
          aria-describedby={showsTagHint ? "edit-tag-hidden" : undefined}
        />
        <HiddenCharacters id="edit-tag-hidden" text={tag} />
        <button type="submit" disabled={busy || gone || revision === undefined || conflict !== undefined}>
          Save
        </button>
        <button type="button" disabled={busy || gone} onClick={() => setConfirming(true)}>
          Delete
        </button>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </form>
      {notice === undefined ? null : <p role="status">{notice}</p>}
      <ErrorAlert error={error} />
      {gone ? (
        <p role="alert" className="error">
          This plant was deleted elsewhere. Nothing of your edit was saved; it stays in the form until you close it.
        </p>
      ) : null}
      {!gone && filterTag !== undefined && stored.tag !== filterTag ? (
        <p role="status">
          This plant is no longer in this filter: its tag is {tagCell(stored.tag)}, the table shows{" "}
          <PrintableText text={filterTag} />. You can go on editing it here.
        </p>
      ) : null}
      {changed === undefined || conflict !== undefined || gone ? null : (
        <div className="conflict" role="group" aria-labelledby="elsewhere-message">
          <p id="elsewhere-message" role="status">
            This plant was changed elsewhere while you were editing it. Take the new revision (what you changed stays in
            the form), or keep editing the one you opened (saving will then show you this choice again).
          </p>
          <WhatChanged label="Changed elsewhere" base={changed.base} now={changed.now} edit={editOf(base, name, tag)} />
          <button type="button" disabled={busy} onClick={() => void takeNewRevision()}>
            Take the new revision
          </button>
          <button type="button" onClick={keepEditing}>
            Keep editing
          </button>
        </div>
      )}
      {conflict === undefined ? null : (
        <div className="conflict" role="group" aria-labelledby="conflict-heading">
          <h3 id="conflict-heading" tabIndex={-1} ref={conflictHeading}>
            This plant changed since you opened it: your edit was not saved.
          </h3>
          <WhatChanged label="What changed" base={conflict.base} now={conflict.current.plant} edit={conflict.edit} />
          <button type="button" disabled={busy} onClick={reapply}>
            Re-apply my edit
          </button>
          <button type="button" disabled={busy} onClick={discard}>
            Discard my edit
          </button>
        </div>
      )}
      {confirming ? (
        <div role="alertdialog" aria-labelledby="confirm-delete" className="confirm">
          <p id="confirm-delete">Delete plant {idText}? This cannot be undone.</p>
          <button type="button" ref={cancelDelete} onClick={() => setConfirming(false)}>
            Cancel
          </button>
          <button type="button" disabled={busy} onClick={() => void remove()}>
            Yes, delete
          </button>
        </div>
      ) : null}
    </section>
  );
}
