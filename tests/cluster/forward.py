"""A TCP forwarder: ``python forward.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT``.

The cluster test's hosts live in network namespaces of their own; PostgreSQL and Redis listen on
the machine's loopback only, so this process, in the machine's namespace, carries their traffic from
the hosts' bridge address to the loopback services."""

import asyncio
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def main(listen_host: str, listen_port: int, target_host: str, target_port: int) -> None:
    async def handle(client_reader, client_writer):
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(target_host, target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))

    server = await asyncio.start_server(handle, listen_host, listen_port, reuse_address=True)
    print("forwarding", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])))
