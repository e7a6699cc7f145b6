import type { NewPlant, PlantStoreClient } from "@plantstore/client";
import { Int64Text, NewPlant as NewPlantSchema } from "@plantstore/schema";
import { type FormEvent, useState } from "react";

import { ErrorAlert } from "./error-alert.tsx";

/**
 * The id stays text until the shared schema reads it as an exact bigint (Int64Text): never a
 * Number, so 9223372036854775807 is sent and shown as typed. The whole plant is then checked with
 * the schema the server uses (NewPlant), so what it would refuse is refused here, in its words.
 */
function readForm(id: string, name: string, tag: string): { plant: NewPlant } | { problems: string[] } {
  const parsedId = Int64Text.safeParse(id.trim());
  if (!parsedId.success) return { problems: [`Id ${parsedId.error.issues[0]?.message ?? "is not an int64"}`] };
  const parsed = NewPlantSchema.safeParse({ id: parsedId.data, name, ...(tag === "" ? {} : { tag }) });
  if (!parsed.success) {
    return { problems: parsed.error.issues.map((issue) => `${issue.path.map(String).join(".")} ${issue.message}`) };
  }
  return { plant: parsed.data };
}

type Props = { client: PlantStoreClient; onCreated: (plant: NewPlant) => void };

export function CreatePlantForm({ client, onCreated }: Props) {
  const [id, setId] = useState("");
  const [name, setName] = useState("");
  const [tag, setTag] = useState("");
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const read = readForm(id, name, tag);
    if ("problems" in read) {
      setError(new Error(`Not sent: ${read.problems.join("; ")}`));
      return;
    }
    setError(undefined);
    setBusy(true);
    try {
      await client.createPlant(read.plant);
      onCreated(read.plant);
      setId("");
      setName("");
      setTag("");
    } catch (thrown) {
      setError(thrown);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="create" aria-labelledby="create-heading" onSubmit={(event) => void submit(event)}>
      <h2 id="create-heading">New plant</h2>
      <label htmlFor="create-id">Id</label>
      <input id="create-id" inputMode="numeric" value={id} onChange={(event) => setId(event.target.value)} />
      <label htmlFor="create-name">Name</label>
      <input id="create-name" value={name} onChange={(event) => setName(event.target.value)} />
      <label htmlFor="create-tag">Tag</label>
      <input id="create-tag" value={tag} onChange={(event) => setTag(event.target.value)} />
      <button type="submit" disabled={busy}>
        Create
      </button>
      <ErrorAlert error={error} />
    </form>
  );
}
