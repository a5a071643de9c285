package io.streamrec.flink.metrics;

import org.apache.flink.metrics.prometheus.AbstractPrometheusReporter;
import org.apache.flink.util.PortRange;

import io.prometheus.client.CollectorRegistry;
import io.prometheus.client.exporter.HTTPServer;

import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import java.util.Iterator;

/**
 * Flink's {@code PrometheusReporter} (same names, labels and types: the metrics come from
 * the same {@link AbstractPrometheusReporter}) with its HTTP server bound to {@code host}
 * rather than to every interface. The first free port of the range is taken.
 */
public class BoundPrometheusReporter extends AbstractPrometheusReporter {

    private final HTTPServer httpServer;

    BoundPrometheusReporter(String host, PortRange ports) {
        httpServer = start(host, ports, registryOf(this));
        log.info(
                "Started the Prometheus reporter's HTTP server on {}:{}.",
                host,
                httpServer.getPort());
    }

    /** The port taken (tests, logs). */
    int getPort() {
        return httpServer.getPort();
    }

    @Override
    public void close() {
        httpServer.stop();
        super.close();
    }

    private static HTTPServer start(String host, PortRange ports, CollectorRegistry registry) {
        IOException lastFailure = null;
        Iterator<Integer> candidates = ports.getPortsIterator();
        while (candidates.hasNext()) {
            int port = candidates.next();
            try {
                return new HTTPServer(new InetSocketAddress(host, port), registry);
            } catch (IOException e) {
                lastFailure = e;
            }
        }
        throw new RuntimeException(
                "Could not start the Prometheus reporter's HTTP server on "
                        + host
                        + ", port(s) "
                        + ports,
                lastFailure);
    }

    // The registry every metric is added to is package-private in Flink's reporter, and
    // this server has to serve that very registry.
    private static CollectorRegistry registryOf(AbstractPrometheusReporter reporter) {
        try {
            Field field = AbstractPrometheusReporter.class.getDeclaredField("registry");
            field.setAccessible(true);
            return (CollectorRegistry) field.get(reporter);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException(
                    "this flink-metrics-prometheus keeps its registry elsewhere; "
                            + "BoundPrometheusReporter needs a change for its version",
                    e);
        }
    }
}
