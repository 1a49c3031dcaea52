package kvserve.example;

import io.grpc.CallCredentials;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** The command line: the same flags as the Go and Ruby examples, --name=value or --name value. */
final class Flags {
  static final String USAGE =
      "usage: KvserveExample [--target=HOST:PORT] [--prompt=TEXT | --prompt-ids=1,2,3]\n"
          + "  [--system=TEXT] [--max-tokens=N] [--ignore-eos] [--deadline-ms=N] [--cancel-after=N]\n"
          + "  [--tls [--tls-ca=F] [--tls-server-name=N] [--tls-client-cert=F --tls-client-key=F]]\n"
          + "  [--auth-token-file=F | --auth-token=T]   (else $KVSERVE_AUTH_TOKEN)\n"
          + "  generate|stream|chat|cancel";
  private static final Set<String> COMMANDS = Set.of("generate", "stream", "chat", "cancel");

  String command;
  String target = "localhost:50051";
  String prompt = "Hello";
  List<Integer> promptIds = new ArrayList<>();
  String system = "You are a concise assistant.";
  int maxTokens = 32;
  boolean ignoreEos;
  long deadlineMs = 60_000;
  int cancelAfter = 4;
  boolean tls;
  String tlsCa = "";
  String tlsServerName = "";
  String tlsClientCert = "";
  String tlsClientKey = "";
  CallCredentials callCredentials; // null: no bearer token

  static Flags parse(String[] args) {
    Flags flags = new Flags();
    String tokenFile = "";
    String token = "";
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (!arg.startsWith("--")) {
        if (flags.command != null || !COMMANDS.contains(arg)) {
          throw new IllegalArgumentException("unexpected argument: " + arg);
        }
        flags.command = arg;
        continue;
      }
      String name = arg.substring(2);
      String value = null;
      int eq = name.indexOf('=');
      if (eq >= 0) {
        value = name.substring(eq + 1);
        name = name.substring(0, eq);
      }
      if (name.equals("ignore-eos") || name.equals("tls")) {
        if (value != null) throw new IllegalArgumentException("--" + name + " takes no value");
        if (name.equals("tls")) flags.tls = true; else flags.ignoreEos = true;
        continue;
      }
      if (value == null) {
        if (++i == args.length) throw new IllegalArgumentException("--" + name + " needs a value");
        value = args[i];
      }
      switch (name) {
        case "target": flags.target = value; break;
        case "prompt": flags.prompt = value; break;
        case "prompt-ids":
          for (String id : value.split(",")) flags.promptIds.add(parseInt(name, id.trim()));
          break;
        case "system": flags.system = value; break;
        case "max-tokens": flags.maxTokens = parseInt(name, value); break;
        case "deadline-ms": flags.deadlineMs = parseInt(name, value); break;
        case "cancel-after": flags.cancelAfter = parseInt(name, value); break;
        case "tls-ca": flags.tlsCa = value; break;
        case "tls-server-name": flags.tlsServerName = value; break;
        case "tls-client-cert": flags.tlsClientCert = value; break;
        case "tls-client-key": flags.tlsClientKey = value; break;
        case "auth-token-file": tokenFile = value; break;
        case "auth-token": token = value; break;
        default: throw new IllegalArgumentException("unknown flag --" + name);
      }
    }
    if (flags.command == null) throw new IllegalArgumentException("no command");
    String bearer = resolveToken(tokenFile, token);
    if (!bearer.isEmpty()) flags.callCredentials = new BearerToken(bearer);
    return flags;
  }

  private static int parseInt(String flag, String value) {
    try {
      return Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--" + flag + ": not an integer: " + value);
    }
  }

  /**
   * Like kvserve-cli: --auth-token-file (its first line that is not blank or a # comment), else
   * --auth-token, else $KVSERVE_AUTH_TOKEN. A file or the environment keeps it out of `ps`.
   */
  private static String resolveToken(String tokenFile, String token) {
    if (!tokenFile.isEmpty()) {
      try {
        return Files.readAllLines(Path.of(tokenFile)).stream()
            .map(String::strip)
            .filter(line -> !line.isEmpty() && !line.startsWith("#"))
            .findFirst()
            .orElseThrow(
                () -> new IllegalArgumentException("--auth-token-file: no token in " + tokenFile));
      } catch (IOException e) {
        throw new IllegalArgumentException("--auth-token-file: " + e);
      }
    }
    if (!token.isEmpty()) return token.strip();
    String environment = System.getenv("KVSERVE_AUTH_TOKEN");
    return environment == null ? "" : environment.strip();
  }
}
